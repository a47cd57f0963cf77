package controlplane

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/startupgate/startupgate/internal/freeport"
	"github.com/startupgate/startupgate/internal/servingcert"
)

// serviceRange is the plane's Service ClusterIP range (envtest's default, set here so that
// the apiserver's ClusterIP below follows from it), and apiServiceIP the kubernetes
// Service's ClusterIP: the range's first address.
const (
	serviceRange = "10.0.0.0/24"
	apiServiceIP = "10.0.0.1"
)

// podControllers are the controller-manager's controllers that Pods on real nodes need and
// fake ones do not: each namespace's default ServiceAccount, the kube-root-ca.crt ConfigMap
// that a Pod's token volume holds the apiserver's CA from, the EndpointSlices that
// kube-proxy routes a Service's ClusterIP by, the garbage collector, which deletes an
// uninstalled Deployment's ReplicaSets and Pods, and the Job controller, which runs the
// chart's pre-delete hook (the Job that releases held nodes at helm uninstall).
const podControllers = "serviceaccount-controller,root-ca-certificate-publisher-controller,endpointslice-controller,garbage-collector-controller,job-controller"

// servePods makes the apiserver reachable from a Pod on a real node. envtest listens on
// 127.0.0.1 with a certificate for it alone, and turns ServiceAccount admission off, as a
// plane without Pods needs no tokens. A Pod connects to https://10.0.0.1:443 (the
// kubernetes Service), which kube-proxy forwards to the advertised address; it verifies
// the certificate against the CA in its token volume, and it authenticates with its token.
func (e *Embedded) servePods(api *envtest.APIServer) error {
	ip := net.ParseIP(e.PodIP)
	if ip == nil || ip.To4() == nil || ip.IsLoopback() {
		return fmt.Errorf("the plane's Pod address %q is not a non-loopback IPv4 address", e.PodIP)
	}
	port, err := freeport.Get()
	if err != nil {
		return err
	}
	dir := filepath.Join(e.dir, "apiserver")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	names := servingcert.Names{
		IPs: []net.IP{ip, net.ParseIP(apiServiceIP), net.IPv4(127, 0, 0, 1)},
		DNS: []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
	}
	// envtest keeps a certificate that is already in its directory, and then neither writes
	// the ServiceAccount token signer beside it nor knows the CA its clients must trust.
	ca, err := servingcert.Write(filepath.Join(dir, "apiserver.crt"), filepath.Join(dir, "apiserver.key"), names)
	if err != nil {
		return fmt.Errorf("writing the apiserver's certificate: %w", err)
	}
	if err := servingcert.WriteSigner(filepath.Join(dir, "sa-signer.crt"), filepath.Join(dir, "sa-signer.key")); err != nil {
		return fmt.Errorf("writing the ServiceAccount token signer: %w", err)
	}
	// A real node's kubelet takes callers with a certificate of this process's CA only
	// (sim/node): the apiserver presents one for kubectl logs and exec.
	kubeletCert, kubeletKey := filepath.Join(dir, "kubelet-client.crt"), filepath.Join(dir, "kubelet-client.key")
	if err := servingcert.WriteClient(kubeletCert, kubeletKey, "kube-apiserver-kubelet-client"); err != nil {
		return fmt.Errorf("writing the apiserver's kubelet client certificate: %w", err)
	}
	api.CertDir = dir
	api.SecureServing.CA = ca
	api.SecureServing.Address = e.PodIP
	api.SecureServing.Port = strconv.Itoa(port)
	api.Configure().
		Set("advertise-address", e.PodIP).
		Set("service-cluster-ip-range", serviceRange).
		Set("disable-admission-plugins", "").
		// kubectl logs and exec reach a real node's kubelet at its InternalIP, as on a
		// kubeadm cluster: the nodes' names do not resolve on this machine.
		Set("kubelet-preferred-address-types", "InternalIP").
		Set("kubelet-client-certificate", kubeletCert).
		Set("kubelet-client-key", kubeletKey)
	return nil
}
