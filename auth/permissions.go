package auth

import (
	"strings"

	"github.com/ontoflow/ontoflow/models"
)

// AdminRole holds every permission.
const AdminRole = "admin"

// HasPermission reports whether u holds permission key. Keys are
// "resource:verb" strings. A grant of "*:*" (or "*") matches every key, a
// grant of "resource:*" matches every verb of that resource, and the admin
// role holds everything. Matching is exact otherwise (case-sensitive).
func HasPermission(u *models.User, key string) bool {
	if u == nil {
		return false
	}
	if u.HasRole(AdminRole) {
		return true
	}
	res, _, _ := strings.Cut(key, ":")
	for _, g := range u.Permissions.V {
		switch {
		case g == key, g == "*:*", g == "*":
			return true
		case strings.HasSuffix(g, ":*") && strings.TrimSuffix(g, ":*") == res:
			return true
		}
	}
	return false
}
