package main

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"
)

// fnSource is the function-backed update the issue asks to compare: it
// reads one input and the target and returns one update edit.
const fnSource = `export default function (ctx) {
  const p = ctx.parameters.priority;
  const t = ctx.target;
  if (t === null) throw new Error("no target");
  const next = p;
  return {
    edits: [{ type: "update", object_id: t.id, properties: { priority: next } }],
    result: { previous: t.properties.priority ?? null },
  };
}`

// functionScenario compares a function-backed update with update_object
// in the same process and run: sequential p50, throughput on conc
// clients (alternating rounds, medians), and a batch of batchN items.
func functionScenario(ctx context.Context, b *bench, updateID string, targets []string, seq, conc, concTotal, batchN int) error {
	var fa struct {
		ID string `json:"id"`
	}
	err := b.post("/api/v1/ontology/actions", map[string]any{"name": "fn-set-priority", "object_type_id": "Ticket", "operation_kind": "invoke_function",
		"inputs": []map[string]any{{"name": "priority", "type": "integer", "required": true}},
		"config": map[string]any{"operation": map[string]any{"inline": map[string]any{"runtime": "javascript", "source": fnSource}}}}, 201, &fa)
	if err != nil {
		return err
	}
	runOf := func(id string, off int) func(int) error {
		return func(i int) error {
			return b.post("/api/v1/ontology/actions/"+id+"/execute",
				map[string]any{"target_object_id": targets[(i+off)%len(targets)], "parameters": map[string]any{"priority": i}}, 200, nil)
		}
	}
	for i := 0; i < 5; i++ {
		if err := runOf(updateID, 0)(i); err != nil {
			return err
		}
		if err := runOf(fa.ID, 0)(i); err != nil {
			return err
		}
	}
	upP50, fnP50, err := sequentialPair(seq, runOf(updateID, 0), runOf(fa.ID, 0))
	if err != nil {
		return err
	}
	var upT, fnT []float64
	for r := 0; r < tputRounds; r++ {
		t, err := drainedThroughput(ctx, b, conc, concTotal, "ActionWorkflow", runOf(updateID, 0))
		if err != nil {
			return err
		}
		upT = append(upT, t)
		err = profiled(fmt.Sprintf("function-throughput-%d", r), func() error {
			t, err := drainedThroughput(ctx, b, conc, concTotal, "ActionWorkflow", runOf(fa.ID, 0))
			fnT = append(fnT, t)
			return err
		})
		if err != nil {
			return err
		}
	}
	// Batches in the order update, function, function, update, each
	// figure the mean of its two: the database grows with every batch,
	// which would otherwise favour whichever runs first.
	var upB, fnB time.Duration
	for i, id := range []string{updateID, fa.ID, fa.ID, updateID} {
		name, into := "update-batch", &upB
		if id == fa.ID {
			name, into = "function-batch", &fnB
		}
		err = profiled(fmt.Sprintf("%s-%d", name, i), func() error {
			d, err := b.batch(id, targets, batchN)
			*into += d / 2
			return err
		})
		if err != nil {
			return err
		}
	}
	printFunctionTable(seq, conc, concTotal, batchN, upP50, fnP50, median(upT), median(fnT), upB, fnB)
	fmt.Printf("\nThroughput rounds (alternating): update_object %s; function %s.\n", fmtRates(upT), fmtRates(fnT))
	return nil
}

// sequentialPair measures f and g one call after the other, n times each,
// so that the machine's other load falls on both alike (this machine is
// shared), and returns each one's median.
func sequentialPair(n int, f, g func(i int) error) (fp50, gp50 time.Duration, err error) {
	var fs, gs []time.Duration
	for i := 0; i < n; i++ {
		for _, c := range []struct {
			run func(int) error
			out *[]time.Duration
		}{{f, &fs}, {g, &gs}} {
			start := time.Now()
			if err := c.run(i); err != nil {
				return 0, 0, err
			}
			*c.out = append(*c.out, time.Since(start))
		}
	}
	slices.Sort(fs)
	slices.Sort(gs)
	return fs[n/2], gs[n/2], nil
}

func printFunctionTable(seq, conc, concTotal, batchN int, upP50, fnP50 time.Duration, upT, fnT float64, upB, fnB time.Duration) {
	fmt.Printf("Command: `go run ./cmd/actionbench %s`; %s, nproc %d, %s.\n\n", strings.Join(os.Args[1:], " "), time.Now().UTC().Format(time.RFC3339), runtime.NumCPU(), cpuModel())
	fmt.Println("| figure | update_object | function-backed update (invoke_function) | ratio | target | met |")
	fmt.Println("|---|---|---|---|---|---|")
	fmt.Printf("| sequential p50 (n=%d) | %s | %s | %.2fx | ≤ 1.5x | %s |\n", seq, ms(upP50), ms(fnP50), ratio(fnP50, upP50), met(ratio(fnP50, upP50) <= 1.5))
	fmt.Printf("| throughput, %d clients, median of %d rounds of %d | %.1f/s | %.1f/s | %.2fx | ≥ 0.7x | %s |\n", conc, tputRounds, concTotal, upT, fnT, fnT/upT, met(fnT/upT >= 0.7))
	fmt.Printf("| batch of %d items (mean of 2, alternating) | %.2f s | %.2f s | %.2fx | ≤ 2x | %s |\n", batchN, upB.Seconds(), fnB.Seconds(), ratio(fnB, upB), met(ratio(fnB, upB) <= 2))
}

// functionsOnly selects functionScenario (-functions).
var functionsOnly bool
