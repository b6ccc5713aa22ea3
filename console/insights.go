package console

import (
	"fmt"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/auth"
	"github.com/ontoflow/ontoflow/executions"
	"github.com/ontoflow/ontoflow/functions"
	"github.com/ontoflow/ontoflow/insights"
	"github.com/ontoflow/ontoflow/models"
)

// insightsView is the Insights page: the report of package insights with
// the geometry of its bars. Bars are SVG drawn here (viewBox 0 0 100 10,
// stretched to their row), their labels HTML, so the text stays readable
// on a narrow screen while the bars scale.
type insightsView struct {
	Window   insights.Window
	Windows  []insights.Window
	Everyone bool
	Report   *insights.Report
	Actions  []actionBars
	Errors   []errorBar
	Funcs    []funcBar
	Channels []channelBar
	// Samples name the bounds the percentiles and deliveries read.
	FunctionSample, DeliverySample int
}

// segment is one part of a stacked bar, in viewBox units (0-100).
type segment struct {
	Class, Label string
	X, W         float64
}

type actionBars struct {
	insights.ActionStats
	Segments   []segment
	Summary    string // the outcome bar's accessible name
	Rate       string
	P50, P95   string
	P50X, P95W float64
}

type errorBar struct {
	insights.ErrorStat
	W float64
}

type funcBar struct {
	insights.FunctionStat
	P95         string
	FailW, RunW float64
}

type channelBar struct {
	insights.ChannelStat
	Segments []segment
	Summary  string
}

// outcomeOrder is the order of a bar's segments and of the legend.
var outcomeOrder = []string{models.StatusSucceeded, models.StatusPartial, models.StatusFailed, models.StatusRunning, models.StatusQueued}

// insightsPage summarizes the action log over a window under the action
// log's read rule: one's own executions, everyone's with the audit
// permission; function package health for those who may read functions.
func (c *Console) insightsPage(g *gin.Context) {
	ctx, p := g.Request.Context(), principal(g)
	w, ok := insights.WindowNamed(g.DefaultQuery("window", insights.Windows[0].Name))
	if !ok {
		c.errorPage(g, http.StatusBadRequest, "Unknown window: choose 24h, 7d or 30d.")
		return
	}
	q := insights.Query{Since: time.Now().Add(-w.Span), Functions: auth.HasPermission(p.User, functions.PermRead)}
	everyone := auth.HasPermission(p.User, executions.PermAuditExecutions)
	if !everyone {
		q.OnlyActorID = p.User.ID
	}
	r, err := c.insights.Report(ctx, q)
	if err != nil {
		c.fail(g, err)
		return
	}
	v := insightsView{Window: w, Windows: insights.Windows, Everyone: everyone, Report: r,
		FunctionSample: insights.FunctionSample, DeliverySample: insights.DeliverySample}
	v.Actions = actionRows(r.Actions)
	v.Errors = errorRows(r.Errors)
	v.Funcs = funcRows(r.Functions)
	v.Channels = channelRows(r.Channels)
	c.page(g, http.StatusOK, "insights", "Insights", v)
}

func actionRows(as []insights.ActionStats) []actionBars {
	var most int64
	var slowest time.Duration
	for _, a := range as {
		most, slowest = max(most, a.Total), max(slowest, a.P95)
	}
	out := make([]actionBars, 0, len(as))
	for _, a := range as {
		row := actionBars{ActionStats: a, Rate: "–", P50: "–", P95: "–"}
		x := 0.0
		summary := fmt.Sprintf("%s: %d executions", a.Name, a.Total)
		for _, st := range outcomeOrder {
			n := a.ByStatus[st]
			if n == 0 {
				continue
			}
			w := 100 * float64(n) / float64(most)
			row.Segments = append(row.Segments, segment{Class: "seg-" + st, Label: fmt.Sprintf("%d %s", n, st), X: x, W: w})
			summary += fmt.Sprintf(", %d %s", n, st)
			x += w
		}
		row.Summary = summary
		if a.Finished() > 0 {
			row.Rate = fmt.Sprintf("%.1f%%", a.SuccessRate())
		}
		if a.Timed > 0 {
			row.P50, row.P95 = duration(a.P50), duration(a.P95)
			if slowest > 0 {
				row.P50X = 100 * float64(a.P50) / float64(slowest)
				row.P95W = 100 * float64(a.P95) / float64(slowest)
			}
		}
		out = append(out, row)
	}
	return out
}

func errorRows(es []insights.ErrorStat) []errorBar {
	out := make([]errorBar, 0, len(es))
	for _, e := range es {
		out = append(out, errorBar{ErrorStat: e, W: 100 * float64(e.Count) / float64(es[0].Count)})
	}
	return out
}

func funcRows(fs []insights.FunctionStat) []funcBar {
	var most int64
	for _, f := range fs {
		most = max(most, f.Runs)
	}
	out := make([]funcBar, 0, len(fs))
	for _, f := range fs {
		row := funcBar{FunctionStat: f, P95: "–"}
		if f.Sampled > 0 {
			row.P95 = duration(f.P95)
		}
		if most > 0 {
			row.RunW = 100 * float64(f.Runs) / float64(most)
			row.FailW = 100 * float64(f.Failures) / float64(most)
		}
		out = append(out, row)
	}
	return out
}

func channelRows(cs []insights.ChannelStat) []channelBar {
	out := make([]channelBar, 0, len(cs))
	for _, ch := range cs {
		row := channelBar{ChannelStat: ch}
		total := ch.Delivered + ch.Failed + ch.Skipped
		x := 0.0
		for _, part := range []struct {
			class, name string
			n           int
		}{{"seg-succeeded", "delivered", ch.Delivered}, {"seg-failed", "failed", ch.Failed}, {"seg-queued", "skipped", ch.Skipped}} {
			if part.n == 0 || total == 0 {
				continue
			}
			w := 100 * float64(part.n) / float64(total)
			row.Segments = append(row.Segments, segment{Class: part.class, Label: fmt.Sprintf("%d %s", part.n, part.name), X: x, W: w})
			x += w
		}
		row.Summary = fmt.Sprintf("%s: %d delivered, %d failed, %d skipped", ch.Channel, ch.Delivered, ch.Failed, ch.Skipped)
		out = append(out, row)
	}
	return out
}

// duration renders a percentile for people: milliseconds below 10 s.
func duration(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%d ms", d.Milliseconds())
	}
	return d.Round(100 * time.Millisecond).String()
}
