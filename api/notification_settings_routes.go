package api

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/users"
)

// NotificationSettingsRoutes registers the caller's notification settings:
// GET and PUT /me/notification-settings. Chat destinations are write-only
// (stored as secrets; GET shows only whether they are set); changing them
// needs a full session, as any credential does.
func NotificationSettingsRoutes(n *users.Notifications) func(g *gin.RouterGroup) {
	return func(g *gin.RouterGroup) {
		g.GET("/me/notification-settings", func(c *gin.Context) {
			v, err := n.Get(c.Request.Context(), principal(c).User.ID)
			if err != nil {
				fail(c, err)
				return
			}
			c.JSON(http.StatusOK, v)
		})
		g.PUT("/me/notification-settings", func(c *gin.Context) {
			if !requireFullSession(c, "change your notification settings") {
				return
			}
			var sp users.NotificationSettingsSpec
			if err := decodeJSON(c, &sp); err != nil {
				fail(c, err)
				return
			}
			v, err := n.Set(c.Request.Context(), principal(c).User.ID, sp)
			if err != nil {
				fail(c, err)
				return
			}
			c.JSON(http.StatusOK, v)
		})
	}
}
