package bench

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// phases runs every phase in order: the sizes but the largest, the zero-jitter burst, the
// paced rates, the binding burst, the largest size (whose memory phase's Pods stay). With
// Only, that phase alone.
func (b *bench) phases(ctx context.Context) error {
	if b.opts.Only == PhaseBindingBurst {
		return b.bindingBurst(ctx)
	}
	sizes := slices.Clone(b.opts.Sizes)
	slices.Sort(sizes)
	sizes = slices.Compact(sizes)
	for _, n := range sizes[:len(sizes)-1] {
		if err := b.size(ctx, n); err != nil {
			return err
		}
	}
	if !b.opts.Skip[PhaseZeroJitter] {
		if err := b.zeroJitter(ctx); err != nil {
			return err
		}
	}
	if !b.opts.Skip[PhasePaced] {
		for _, rate := range b.opts.Rates {
			if err := b.paced(ctx, rate); err != nil {
				return err
			}
		}
	}
	if !b.opts.Skip[PhaseBindingBurst] {
		if err := b.bindingBurst(ctx); err != nil {
			return err
		}
	}
	return b.size(ctx, sizes[len(sizes)-1])
}

// size runs every mode at one burst size: the pairs, the reactive peer (at the reference),
// then the webhook gate on its own line.
func (b *bench) size(ctx context.Context, n int) error {
	key := strconv.Itoa(n)
	var cpu [2]float64 // gate, floor: CPU seconds over the pairs
	var rel [2]int
	var first *RunResult // the first pair's gate run
	pairs := b.opts.Pairs
	if n == b.largest && b.opts.LargestPairs > 0 {
		pairs = b.opts.LargestPairs
	}
	for i := 1; i <= pairs; i++ {
		var adm *histogramDelta
		if n == b.opts.Reference && i == 1 {
			adm = &histogramDelta{}
		}
		g, err := b.run(ctx, load{mode: benchPolicy, nodes: n, pair: i, jitter: time.Second}, adm)
		if err != nil {
			return err
		}
		if adm != nil {
			b.rep.AdmissionMS.Policy = adm.quantiles()
		}
		f, err := b.run(ctx, load{mode: benchFloor, nodes: n, pair: i, jitter: time.Second}, nil)
		if err != nil {
			return err
		}
		b.rep.Pairs[key] = append(b.rep.Pairs[key], pairOf(g, f))
		if i == 1 {
			first = g
			if n == b.opts.Reference {
				b.breakdownOf(fmt.Sprintf("%d-node burst, policy gate, pair 1", n), g.Name)
				b.breakdownOf(fmt.Sprintf("%d-node burst, policy floor, pair 1", n), f.Name)
			}
		}
		for j, r := range []*RunResult{g, f} {
			if r.CPUS > 0 {
				cpu[j] += r.CPUS
				rel[j] += r.Released
			}
		}
	}
	b.rep.PairRatio[key] = summarize(b.rep.Pairs[key])
	if n == b.opts.Reference {
		if err := b.compareWorkers(ctx, load{mode: benchPolicy, nodes: n, jitter: time.Second}, first); err != nil {
			return err
		}
	}
	if n == b.opts.Reference && rel[0] > 0 && rel[1] > 0 {
		c := &b.rep.CPUPer1000
		c.Gate, c.Floor = round2(cpu[0]/float64(rel[0])*1000), round2(cpu[1]/float64(rel[1])*1000)
		if c.Floor > 0 {
			c.Ratio = round2(c.Gate / c.Floor)
		}
	}
	if n == b.opts.Reference && !b.opts.Skip[PhaseReactive] {
		reactive, err := b.run(ctx, load{mode: benchReactive, nodes: n, jitter: time.Second}, nil)
		if err != nil {
			return err
		}
		b.rep.ReactiveEarlyPods = reactive.EarlyPods
	}
	if b.opts.Skip[PhaseWebhook] {
		return nil
	}
	var adm histogramDelta
	gateRun, err := b.run(ctx, load{mode: benchGate, nodes: n, jitter: time.Second}, &adm)
	if err != nil {
		return err
	}
	b.rep.ReleaseLatencyMS[key] = gateRun.LatencyMS
	b.rep.SimWallS[key] = gateRun.WallS
	if n == b.opts.Reference {
		b.rep.AdmissionMS.Webhook = adm.quantiles()
		b.breakdownOf(fmt.Sprintf("%d-node burst, webhook gate", n), gateRun.Name)
	}
	return nil
}

// zeroJitter is a burst whose init Pods all turn Ready 2s after they are bound, with no
// jitter: every release is due at about the same moment. Gate, then floor.
func (b *bench) zeroJitter(ctx context.Context) error {
	n := b.opts.ZeroJitter
	g, err := b.run(ctx, load{mode: benchPolicy, nodes: n, zero: true}, nil)
	if err != nil {
		return err
	}
	b.breakdownOf(fmt.Sprintf("%d-node burst, zero jitter, gate", n), g.Name)
	f, err := b.run(ctx, load{mode: benchFloor, nodes: n, zero: true}, nil)
	if err != nil {
		return err
	}
	b.breakdownOf(fmt.Sprintf("%d-node burst, zero jitter, floor", n), f.Name)
	b.rep.Pairs["zero-jitter-"+strconv.Itoa(n)] = []Pair{pairOf(g, f)}
	return b.compareWorkers(ctx, load{mode: benchPolicy, nodes: n, zero: true}, g)
}

// compareWorkers runs the gate on l once per CompareWorkers setting, beside shipped (the
// same load with the shipped default).
func (b *bench) compareWorkers(ctx context.Context, l load, shipped *RunResult) error {
	for _, w := range b.opts.CompareWorkers {
		l.workers = w
		r, err := b.run(ctx, l, nil)
		if err != nil {
			return err
		}
		wr := WorkersRun{Burst: shipped.Name, Workers: w, Run: r.Name, P99: r.LatencyMS.P99, ShippedP99: shipped.LatencyMS.P99,
			WorkqueueP99: b.gateStages[r.Name][stageWorkqueue].P99, ShippedQueueP99: b.gateStages[shipped.Name][stageWorkqueue].P99}
		if complete(r) && complete(shipped) && r.LatencyMS.P99 > 0 {
			wr.Ratio = round2(shipped.LatencyMS.P99 / r.LatencyMS.P99)
		}
		b.rep.Workers = append(b.rep.Workers, wr)
	}
	return nil
}

// paced joins nodes at rate per second for PacedFor, gate then floor, both on the policy.
func (b *bench) paced(ctx context.Context, rate int) error {
	l := load{nodes: rate * int(b.opts.PacedFor/time.Second), rate: rate, jitter: time.Second}
	l.mode = benchPolicy
	g, err := b.run(ctx, l, nil)
	if err != nil {
		return err
	}
	l.mode = benchFloor
	f, err := b.run(ctx, l, nil)
	if err != nil {
		return err
	}
	b.rep.Paced = append(b.rep.Paced, Paced{Rate: rate, Seconds: b.opts.PacedFor.Seconds(), Nodes: l.nodes,
		Gate: g.LatencyMS, Floor: f.LatencyMS, Complete: complete(g) && complete(f)})
	return nil
}

func complete(r *RunResult) bool { return r.Nodes > 0 && r.Released == r.Nodes }

func pairOf(g, f *RunResult) Pair {
	p := Pair{Gate: g.Name, Floor: f.Name, GateP99: g.LatencyMS.P99, FloorP99: f.LatencyMS.P99}
	if complete(g) && complete(f) && f.LatencyMS.P99 > 0 {
		p.Ratio = round2(g.LatencyMS.P99 / f.LatencyMS.P99)
	}
	return p
}

// summarize is the median, min and max of the complete pairs' ratios.
func summarize(pairs []Pair) RatioSummary {
	var rs []float64
	for _, p := range pairs {
		if p.Ratio > 0 {
			rs = append(rs, p.Ratio)
		}
	}
	if len(rs) == 0 {
		return RatioSummary{}
	}
	slices.Sort(rs)
	med := rs[len(rs)/2]
	if len(rs)%2 == 0 {
		med = round2((rs[len(rs)/2-1] + rs[len(rs)/2]) / 2)
	}
	return RatioSummary{Median: med, Min: rs[0], Max: rs[len(rs)-1], N: len(rs)}
}
