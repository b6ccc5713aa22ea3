package api

import (
	_ "embed"
	"net/http"

	"github.com/gin-gonic/gin"
)

// OpenAPI is the API's OpenAPI 3 document, kept in the repository beside
// the routes; a test checks that every route of the router is in it.
//
//go:embed openapi.yaml
var OpenAPI []byte

func serveOpenAPI(c *gin.Context) { c.Data(http.StatusOK, "application/yaml", OpenAPI) }
