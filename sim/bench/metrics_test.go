package bench

import (
	"math"
	"strings"
	"testing"
	"time"
)

const scrapeBefore = `# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="w",operation="CREATE",rejected="false",type="admit",le="0.005"} 10
apiserver_admission_webhook_admission_duration_seconds_bucket{name="w",operation="CREATE",rejected="false",type="admit",le="0.025"} 10
apiserver_admission_webhook_admission_duration_seconds_bucket{name="w",operation="CREATE",rejected="false",type="admit",le="+Inf"} 10
apiserver_admission_webhook_admission_duration_seconds_sum{name="w",operation="CREATE",rejected="false",type="admit"} 0.01
apiserver_admission_webhook_admission_duration_seconds_count{name="w",operation="CREATE",rejected="false",type="admit"} 10
`

// After: 100 more calls of w — 90 under 5ms, 9 under 25ms, 1 above — plus another
// webhook's series and a rejected series of w that must be summed in (they match).
const scrapeAfter = `# TYPE apiserver_admission_webhook_admission_duration_seconds histogram
apiserver_admission_webhook_admission_duration_seconds_bucket{name="w",operation="CREATE",rejected="false",type="admit",le="0.005"} 100
apiserver_admission_webhook_admission_duration_seconds_bucket{name="w",operation="CREATE",rejected="false",type="admit",le="0.025"} 109
apiserver_admission_webhook_admission_duration_seconds_bucket{name="w",operation="CREATE",rejected="false",type="admit",le="+Inf"} 110
apiserver_admission_webhook_admission_duration_seconds_sum{name="w",operation="CREATE",rejected="false",type="admit"} 1
apiserver_admission_webhook_admission_duration_seconds_count{name="w",operation="CREATE",rejected="false",type="admit"} 110
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other",operation="CREATE",rejected="false",type="admit",le="0.005"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other",operation="CREATE",rejected="false",type="admit",le="0.025"} 0
apiserver_admission_webhook_admission_duration_seconds_bucket{name="other",operation="CREATE",rejected="false",type="admit",le="+Inf"} 500
apiserver_admission_webhook_admission_duration_seconds_sum{name="other",operation="CREATE",rejected="false",type="admit"} 900
apiserver_admission_webhook_admission_duration_seconds_count{name="other",operation="CREATE",rejected="false",type="admit"} 500
`

func TestHistogramDelta(t *testing.T) {
	match := map[string]string{"name": "w", "type": "admit", "operation": "CREATE"}
	d, err := deltaOf([]byte(scrapeBefore), []byte(scrapeAfter), "apiserver_admission_webhook_admission_duration_seconds", match)
	if err != nil {
		t.Fatal(err)
	}
	if d.total() != 100 {
		t.Fatalf("total = %d, want 100 (the other webhook must not count, the before scrape must be subtracted)", d.total())
	}
	for _, c := range []struct {
		q            float64
		ms, bucketMS float64
	}{
		{0.50, 2.78, 5},   // rank 50 of 90 in [0,5ms]
		{0.90, 5, 5},      // rank 90: the top of the first bucket
		{0.95, 16.11, 25}, // rank 95: 5 of 9 in (5,25ms]
		{0.999, 25, math.Inf(1)},
	} {
		ms, bucket := d.quantile(c.q)
		if math.Abs(ms-c.ms) > 0.01 || bucket != c.bucketMS {
			t.Errorf("quantile(%v) = %v ms in bucket %v, want %v in %v", c.q, ms, bucket, c.ms, c.bucketMS)
		}
	}
	if q := d.quantiles(); q.Count != 100 || q.BucketMS != 25 {
		t.Errorf("quantiles() = %+v, want count 100 and p99 in the 25ms bucket", q)
	}
}

func TestHistogramDeltaAbsentSeries(t *testing.T) {
	d, err := deltaOf(nil, []byte(scrapeAfter), "no_such_metric", nil)
	if err != nil {
		t.Fatal(err)
	}
	if q := d.quantiles(); q != (Quantiles{}) {
		t.Errorf("quantiles of nothing = %+v, want zero", q)
	}
}

func TestGauges(t *testing.T) {
	raw := "# TYPE go_memstats_heap_inuse_bytes gauge\ngo_memstats_heap_inuse_bytes 1.5e+07\n# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 2.5\n"
	v, err := gauges([]byte(raw), "go_memstats_heap_inuse_bytes", "process_cpu_seconds_total")
	if err != nil || v[0] != 1.5e7 || v[1] != 2.5 {
		t.Fatalf("gauges = %v, %v", v, err)
	}
	if _, err := gauges([]byte(raw), "process_resident_memory_bytes"); err == nil {
		t.Error("a missing metric must be an error, not a zero")
	}
}

func TestReadAudit(t *testing.T) {
	log := strings.Join([]string{
		// the gate's release of bench-gate-10-n1, after one conflict
		`{"verb":"patch","userAgent":"gate/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"nodes","name":"bench-gate-10-n1"},"responseStatus":{"code":409},"requestReceivedTimestamp":"2026-01-01T00:00:00.100000Z","stageTimestamp":"2026-01-01T00:00:00.110000Z"}`,
		`{"verb":"patch","userAgent":"gate/v0.0.0 (linux/amd64) kubernetes/$Format","objectRef":{"resource":"nodes","name":"bench-gate-10-n1"},"responseStatus":{"code":200},"requestReceivedTimestamp":"2026-01-01T00:00:00.200000Z","stageTimestamp":"2026-01-01T00:00:00.231500Z"}`,
		// the floor's
		`{"verb":"patch","userAgent":"startupgate-floor","objectRef":{"resource":"nodes","name":"bench-floor-10-n1"},"responseStatus":{"code":200}}`,
		// not counted: a kubelet status write, a controller's taint patch, the node's creation
		`{"verb":"update","userAgent":"startupgate-sim","objectRef":{"resource":"nodes","name":"bench-gate-10-n1","subresource":"status"},"responseStatus":{"code":200}}`,
		`{"verb":"patch","userAgent":"kube-controller-manager/v1.36.3","objectRef":{"resource":"nodes","name":"bench-gate-10-n1"},"responseStatus":{"code":200}}`,
		`{"verb":"create","userAgent":"gate/v0.0.0","objectRef":{"resource":"nodes","name":"bench-gate-10-n2"},"responseStatus":{"code":201}}`,
	}, "\n")
	a, err := readAudit(strings.NewReader(log))
	if err != nil {
		t.Fatal(err)
	}
	got := a.counts
	if w := a.first["bench-gate-10-n1"]; w.done.Sub(w.received) != 31500*time.Microsecond {
		t.Errorf("first write of bench-gate-10-n1: %+v; want the successful one, stored 31.5ms after it was received", w)
	}
	if g := got["bench-gate-10"]; g != (writeCount{ok: 1, conflicts: 1}) {
		t.Errorf("gate writes = %+v, want 1 ok and 1 conflict", g)
	}
	if f := got["bench-floor-10"]; f != (writeCount{ok: 1}) {
		t.Errorf("floor writes = %+v, want 1", f)
	}
	if _, err := readAudit(strings.NewReader("not json")); err == nil {
		t.Error("a corrupt audit log must be an error")
	}
}
