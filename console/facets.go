package console

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strconv"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// A column's facets (issue 48): the objects the explorer's filters select,
// counted by one property's values, as bars drawn here in SVG beside the
// same figures as a table. Strings and other exact values show their
// most frequent values (facetTop, the rest as "other"); dates a histogram
// by the chosen interval; numbers a histogram of facetBuckets-ish buckets
// of a round width. Every figure is ontology.Store.Aggregate's, under the
// user's read rule.
const (
	facetTop     = 20
	facetBuckets = 20
)

// facetIntervals are the date histogram's intervals offered.
var facetIntervals = []string{"hour", "day", "week", "month", "year"}

type facetBar struct {
	Label string
	Count int64
	W     float64 // the bar's width, 0-100
	Other bool
}

type facetsView struct {
	*exploreView
	Prop      models.Property
	Label     string
	Kind      string // "values", "dates" or "numbers"
	Interval  string
	Intervals []string
	Width     string
	Total     int64
	Bars      []facetBar
	Filtered  bool // the table's filters select the objects
}

// facetsPage answers /ui/explore/:type/facets?by=<property>.
func (c *Console) facetsPage(g *gin.Context) {
	u := principal(g).User
	ot, ok := c.exploredType(g)
	if !ok {
		return
	}
	v := &facetsView{exploreView: newExploreView(ot, g.Request.URL.Query()), Intervals: facetIntervals}
	i := slices.IndexFunc(ot.Properties, func(p models.Property) bool { return p.Name == g.Query("by") })
	if i < 0 {
		c.fail(g, apperr.New(apperr.InvalidArgument, "object type %s has no property %q to chart", ot.Name, g.Query("by")))
		return
	}
	v.Prop = ot.Properties[i]
	v.Filtered = len(v.filters()) > 0
	v.Label = displayName(v.Prop.DisplayName, v.Prop.Name)
	res, err := c.facets(g, u, v)
	if err != nil {
		c.fail(g, err)
		return
	}
	v.bars(res)
	c.page(g, http.StatusOK, "facets", v.Label+" · "+v.Title, v)
}

// facets runs the aggregation the property's type calls for.
func (c *Console) facets(g *gin.Context, u *models.User, v *facetsView) (*ontology.AggregateResult, error) {
	ctx := g.Request.Context()
	req := ontology.AggregateRequest{Filters: aggFilters(v.filters())}
	gb := ontology.GroupBy{Property: v.Prop.Name}
	switch base := v.Prop.Type.V.Base; {
	case base == domain.TypeDate || base == domain.TypeTimestamp:
		v.Kind, v.Interval = "dates", g.DefaultQuery("interval", "day")
		if !slices.Contains(facetIntervals, v.Interval) {
			return nil, apperr.New(apperr.InvalidArgument, "interval is one of %v", facetIntervals)
		}
		gb.Type, gb.Interval = ontology.GroupDate, v.Interval
	case base == domain.TypeInteger || base == domain.TypeDouble:
		w, err := c.roundWidth(g, u, v, req)
		if err != nil {
			return nil, err
		}
		v.Kind, v.Width = "numbers", w
		gb.Type, gb.Width = ontology.GroupFixedWidth, json.Number(w)
	default:
		v.Kind = "values"
		gb.MaxGroups = facetTop
		req.Order = &ontology.AggOrder{By: "count", Direction: "desc"}
	}
	req.GroupBy = []ontology.GroupBy{gb}
	return c.d.Store.Aggregate(ctx, u, v.Type.ID, req)
}

// roundWidth is a width of 1, 2 or 5 times a power of ten that splits
// the property's range over the selected objects into about
// facetBuckets buckets.
func (c *Console) roundWidth(g *gin.Context, u *models.User, v *facetsView, req ontology.AggregateRequest) (string, error) {
	req.Metrics = []ontology.Metric{{Name: "lo", Type: "min", Property: v.Prop.Name}, {Name: "hi", Type: "max", Property: v.Prop.Name}}
	res, err := c.d.Store.Aggregate(g.Request.Context(), u, v.Type.ID, req)
	if err != nil {
		return "", err
	}
	lo, okLo := asFloat(res.Groups[0].Metrics["lo"])
	hi, okHi := asFloat(res.Groups[0].Metrics["hi"])
	if !okLo || !okHi || hi <= lo {
		return "1", nil
	}
	raw := (hi - lo) / facetBuckets
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	w := p
	for _, m := range []float64{1, 2, 5, 10} {
		if w = m * p; w >= raw {
			break
		}
	}
	if v.Prop.Type.V.Base == domain.TypeInteger {
		w = math.Max(1, math.Round(w))
	}
	return strconv.FormatFloat(w, 'g', -1, 64), nil
}

func asFloat(v any) (float64, bool) {
	f, err := strconv.ParseFloat(fmt.Sprint(v), 64)
	return f, err == nil && v != nil
}

// aggFilters are the explorer's filters as an aggregation takes them.
func aggFilters(fs []ontology.RawFilter) []ontology.AggFilter {
	out := make([]ontology.AggFilter, 0, len(fs))
	for _, f := range fs {
		b, _ := json.Marshal(f.Value) // a string always encodes
		out = append(out, ontology.AggFilter{Key: f.Key, Value: b})
	}
	return out
}

// bars turns the groups into bars scaled to the largest.
func (v *facetsView) bars(res *ontology.AggregateResult) {
	var top int64
	for _, g := range res.Groups {
		n, _ := g.Metrics["count"].(int64)
		top = max(top, n)
		v.Total += n
	}
	for _, g := range res.Groups {
		n, _ := g.Metrics["count"].(int64)
		b := facetBar{Label: facetLabel(g.Key[0]), Count: n, Other: g.Key[0].Other}
		if top > 0 {
			b.W = 100 * float64(n) / float64(top)
		}
		v.Bars = append(v.Bars, b)
	}
}

// facetLabel names a bucket: its value, its bounds, "other" or "no value".
func facetLabel(k ontology.GroupKey) string {
	switch {
	case k.Other:
		return "other values"
	case k.From != nil || k.To != nil:
		return fmt.Sprintf("%s – %s", valueText(k.From), valueText(k.To))
	case k.Value == nil:
		return "no value"
	}
	return valueText(k.Value)
}

// FacetsLink is the link to a column's facets, with the table's filters
// ("" for a property whose values the index holds only as hashes: json,
// geo points, vectors, arrays of them).
func (v *exploreView) FacetsLink(p models.Property) string {
	t := p.Type.V
	if t.Base == domain.TypeArray && t.ElementType != nil {
		t = *t.ElementType
	}
	switch t.Base {
	case domain.TypeJSON, domain.TypeArray, domain.TypeGeoPoint, domain.TypeVector:
		return ""
	}
	return v.linkAt("/facets", "by", p.Name, "page", "", "after", "", "q", "", "sort", "")
}

// IntervalLink is this chart at another date interval.
func (v *facetsView) IntervalLink(iv string) string {
	return v.linkAt("/facets", "by", v.Prop.Name, "interval", iv, "page", "", "after", "", "q", "", "sort", "")
}

// TableLink is the explorer's table with the same filters.
func (v *facetsView) TableLink() string { return v.link("page", "", "after", "", "q", "") }
