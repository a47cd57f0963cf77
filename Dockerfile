# The gate's container image: a static binary on distroless, non-root, no shell.
#   make docker-build IMG=REG/startupgate:TAG
# deploy/deploy_test.go holds the go build line below equal to `make build`'s.

FROM golang:1.26 AS builder
# The version and commit the binary reports; make docker-build passes VERSION's and git's.
ARG VERSION=dev
ARG COMMIT=unknown
WORKDIR /src
# Dependencies first, so a source change does not re-download modules.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X github.com/startupgate/startupgate/internal/version.Version=${VERSION} -X github.com/startupgate/startupgate/internal/version.Commit=${COMMIT}" -o /out/gate ./cmd/gate

FROM gcr.io/distroless/static-debian12:nonroot
ARG VERSION=dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.version="${VERSION}" org.opencontainers.image.revision="${COMMIT}"
COPY --from=builder /out/gate /gate
# distroless's nonroot user; the Deployment runs as the same UID/GID.
USER 65532:65532
ENTRYPOINT ["/gate"]
