package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/ontology"
)

// aggregateRoutes registers POST /ontology/types/:type_id/aggregate:
// counts, sums and histograms over a type's objects under the listing's
// filters and read rule (ontology.Store.Aggregate; docs/ontology.md,
// "Aggregations"). A read: authentication only, as the listing.
func (h *ontologyAPI) aggregateRoutes(o *gin.RouterGroup) {
	o.POST("/types/:type_id/aggregate", h.aggregate)
}

func (h *ontologyAPI) aggregate(c *gin.Context) {
	var req ontology.AggregateRequest
	if err := decodeJSON(c, &req); err != nil {
		fail(c, err)
		return
	}
	var res *ontology.AggregateResult
	err := h.inBranch(c, func(s *ontology.Store) (err error) {
		res, err = s.Aggregate(c.Request.Context(), ontoUser(c), c.Param("type_id"), req)
		return err
	})
	ontoReply(c, http.StatusOK, res, err)
}
