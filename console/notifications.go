package console

import (
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/ontoflow/ontoflow/models"
)

type notificationsView struct {
	Rows       []models.Notification
	UnreadOnly bool
	CSRF       string
}

// notificationsPage is the caller's in-app inbox, newest first.
func (c *Console) notificationsPage(g *gin.Context) {
	p := principal(g)
	v := notificationsView{UnreadOnly: g.Query("unread") == "true", CSRF: g.GetString(csrfKey)}
	var err error
	if v.Rows, err = c.d.Inbox.List(g.Request.Context(), p.User.ID, v.UnreadOnly, 0, 100); err != nil {
		c.fail(g, err)
		return
	}
	c.page(g, http.StatusOK, "notifications", "Notifications", v)
}

// markRead marks one of the caller's notifications read (as POST
// /notifications/{id}/read, through the same inbox: another user's is
// not found) and returns to the inbox.
func (c *Console) markRead(g *gin.Context) {
	if err := c.d.Inbox.MarkRead(g.Request.Context(), principal(g).User.ID, g.Param("id")); err != nil {
		c.fail(g, err)
		return
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/notifications")
}
