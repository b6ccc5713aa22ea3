package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"time"
)

// webhookFigures measures an invoke_webhook action against a receiver on
// loopback that answers 204 at once: sequential p50 and the throughput of
// conc clients (median of tputRounds rounds), to set beside the bare
// workflow's figures of the same run. The effect step is a regular
// activity (a task-queue round trip) where update_object runs only local
// activities, so this is the price of a call that leaves the process.
type webhookFigures struct {
	p50, p95 time.Duration
	tputs    []float64
}

func (b *bench) webhook(ctx context.Context, seq, conc, total int) (*webhookFigures, error) {
	rx := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	defer rx.Close()
	var a struct {
		ID string `json:"id"`
	}
	if err := b.post("/api/v1/ontology/actions", map[string]any{"name": "notify-receiver", "operation_kind": "invoke_webhook",
		"config": map[string]any{"operation": map[string]any{"url": rx.URL + "/hook/{{ execution_id }}"}}}, 201, &a); err != nil {
		return nil, err
	}
	run := func(int) error {
		return b.post("/api/v1/ontology/actions/"+a.ID+"/execute", map[string]any{}, 200, nil)
	}
	for i := 0; i < 5; i++ {
		if err := run(i); err != nil {
			return nil, fmt.Errorf("warm the webhook path: %w", err)
		}
	}
	f := &webhookFigures{}
	var err error
	if f.p50, f.p95, err = sequential(seq, run); err != nil {
		return nil, err
	}
	for r := 0; r < tputRounds; r++ {
		t, err := drainedThroughput(ctx, b, conc, total, "ActionWorkflow", run)
		if err != nil {
			return nil, err
		}
		f.tputs = append(f.tputs, t)
	}
	return f, nil
}

// print writes the webhook table: against the bare workflow of the same
// run, and beside update_object's figures.
func (f *webhookFigures) print(bareP50 time.Duration, bareTput float64, updP50 time.Duration, updTput float64, conc int) {
	t := median(f.tputs)
	fmt.Printf("\ninvoke_webhook against a loopback receiver that answers at once, same run:\n\n")
	fmt.Println("| figure | bare workflow | update_object | invoke_webhook | webhook / bare | target | met |")
	fmt.Println("|---|---|---|---|---|---|---|")
	fmt.Printf("| sequential p50 | %s | %s | %s | %.2fx | ≤ 0.5x | %s |\n", ms(bareP50), ms(updP50), ms(f.p50), ratio(f.p50, bareP50), met(ratio(f.p50, bareP50) <= 0.5))
	fmt.Printf("| sequential p95 | | | %s | | | |\n", ms(f.p95))
	fmt.Printf("| throughput, %d clients (median) | %.1f/s | %.1f/s | %.1f/s | %.2fx | ≥ 1x | %s |\n", conc, bareTput, updTput, t, t/bareTput, met(t >= bareTput))
	fmt.Printf("\nWebhook throughput rounds: %s.\n", fmtRates(f.tputs))
}
