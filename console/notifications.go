package console

import (
	"net/http"
	"time"

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
	q := c.d.DB.WithContext(g.Request.Context()).Where("user_id = ?", p.User.ID)
	if v.UnreadOnly {
		q = q.Where("read_at IS NULL")
	}
	if err := q.Order("created_at DESC, id").Limit(100).Find(&v.Rows).Error; err != nil {
		c.fail(g, err)
		return
	}
	c.page(g, http.StatusOK, "notifications", "Notifications", v)
}

// markRead marks one of the caller's notifications read (as POST
// /notifications/{id}/read) and returns to the inbox.
func (c *Console) markRead(g *gin.Context) {
	now := time.Now().UTC()
	res := c.d.DB.WithContext(g.Request.Context()).Model(&models.Notification{}).
		Where("id = ? AND user_id = ? AND read_at IS NULL", g.Param("id"), principal(g).User.ID).Update("read_at", &now)
	if res.Error != nil {
		c.fail(g, res.Error)
		return
	}
	g.Redirect(http.StatusSeeOther, Prefix+"/notifications")
}
