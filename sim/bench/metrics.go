package bench

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Reading Prometheus text exposition: the apiserver's histograms and the gate's gauges.

// histogramDelta is a cumulative histogram's growth between two scrapes: what was observed
// in between. Bounds are upper bounds in seconds, counts cumulative, +Inf last.
type histogramDelta struct {
	bounds []float64
	counts []uint64
}

// deltaOf subtracts the before scrape's histogram from the after scrape's, summing every
// series of metric whose labels include match.
func deltaOf(before, after []byte, metric string, match map[string]string) (histogramDelta, error) {
	b, err := histogramOf(before, metric, match)
	if err != nil {
		return histogramDelta{}, err
	}
	a, err := histogramOf(after, metric, match)
	if err != nil {
		return histogramDelta{}, err
	}
	d := histogramDelta{bounds: a.bounds, counts: make([]uint64, len(a.counts))}
	for i := range a.counts {
		d.counts[i] = a.counts[i]
		if i < len(b.counts) && b.counts[i] <= a.counts[i] {
			d.counts[i] -= b.counts[i]
		}
	}
	return d, nil
}

func histogramOf(raw []byte, metric string, match map[string]string) (histogramDelta, error) {
	fams, err := parseMetrics(raw)
	if err != nil {
		return histogramDelta{}, err
	}
	var h histogramDelta
	fam, ok := fams[metric]
	if !ok {
		return h, nil // nothing observed yet: the series does not exist
	}
	for _, m := range fam.GetMetric() {
		if !labelsMatch(m.GetLabel(), match) || m.GetHistogram() == nil {
			continue
		}
		hist := m.GetHistogram()
		var finite []*dto.Bucket // the text form may or may not list +Inf; the count is it
		for _, bk := range hist.GetBucket() {
			if !math.IsInf(bk.GetUpperBound(), 1) {
				finite = append(finite, bk)
			}
		}
		if h.bounds == nil {
			for _, bk := range finite {
				h.bounds = append(h.bounds, bk.GetUpperBound())
			}
			h.bounds = append(h.bounds, math.Inf(1))
			h.counts = make([]uint64, len(h.bounds))
		}
		for i, bk := range finite {
			if i < len(h.counts)-1 {
				h.counts[i] += bk.GetCumulativeCount()
			}
		}
		h.counts[len(h.counts)-1] += hist.GetSampleCount()
	}
	return h, nil
}

func labelsMatch(have []*dto.LabelPair, want map[string]string) bool {
	n := 0
	for _, l := range have {
		if v, ok := want[l.GetName()]; ok {
			if v != l.GetValue() {
				return false
			}
			n++
		}
	}
	return n == len(want)
}

// quantile estimates the q-quantile in ms the way Prometheus's histogram_quantile does:
// linear interpolation inside the bucket the rank falls in (from 0 for the first bucket).
// A rank in the +Inf bucket reports the largest finite bound. It also returns that bucket's
// upper bound in ms.
func (h histogramDelta) quantile(q float64) (ms, bucketMS float64) {
	total := h.total()
	if total == 0 {
		return 0, 0
	}
	rank := q * float64(total)
	i := sort.Search(len(h.counts), func(i int) bool { return float64(h.counts[i]) >= rank })
	if i >= len(h.bounds)-1 {
		last := h.bounds[len(h.bounds)-2] * 1000
		return last, math.Inf(1)
	}
	lower, below := 0.0, uint64(0)
	if i > 0 {
		lower, below = h.bounds[i-1], h.counts[i-1]
	}
	upper := h.bounds[i]
	in := h.counts[i] - below
	v := upper
	if in > 0 {
		v = lower + (upper-lower)*(rank-float64(below))/float64(in)
	}
	return round2(v * 1000), upper * 1000
}

func (h histogramDelta) total() uint64 {
	if len(h.counts) == 0 {
		return 0
	}
	return h.counts[len(h.counts)-1]
}

// quantiles is the report form: p50, p99, the count and the p99's bucket.
func (h histogramDelta) quantiles() Quantiles {
	p50, _ := h.quantile(0.50)
	p99, bucket := h.quantile(0.99)
	if math.IsInf(bucket, 1) {
		bucket = -1
	}
	return Quantiles{P50: p50, P99: p99, Count: h.total(), BucketMS: bucket}
}

// gauges reads the values of single-series metrics (gauges or counters), in order.
func gauges(raw []byte, names ...string) ([]float64, error) {
	fams, err := parseMetrics(raw)
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(names))
	for i, n := range names {
		fam, ok := fams[n]
		if !ok || len(fam.GetMetric()) == 0 {
			return nil, fmt.Errorf("metric %s not exposed", n)
		}
		m := fam.GetMetric()[0]
		switch {
		case m.GetGauge() != nil:
			out[i] = m.GetGauge().GetValue()
		case m.GetCounter() != nil:
			out[i] = m.GetCounter().GetValue()
		case m.GetUntyped() != nil:
			out[i] = m.GetUntyped().GetValue()
		}
	}
	return out, nil
}

func parseMetrics(raw []byte) (map[string]*dto.MetricFamily, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parsing metrics: %w", err)
	}
	return fams, nil
}

func httpGet(ctx context.Context, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return body, nil
}
