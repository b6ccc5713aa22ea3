package domain

import (
	"strings"
	"testing"
)

// A webhook url takes templates in its path and query only: a host chosen
// per execution would let whoever runs the action choose the destination.
func TestCheckWebhookTemplatesOnlyInPathAndQuery(t *testing.T) {
	for _, u := range []string{
		"https://{{ parameters.host }}/hook",
		"https://api.{{ secrets.DOMAIN }}/hook",
		"{{ parameters.scheme }}://crm.example/hook",
	} {
		err := CheckWebhook("config.operation", "POST", u, nil)
		if err == nil || !strings.Contains(err.Error(), "path and query only") {
			t.Errorf("%s: %v, want a refusal of the template in the host", u, err)
		}
	}
	for _, u := range []string{
		"https://crm.example/t/{{ parameters.id }}?q={{ target.properties.title }}",
		"https://crm.example:8443/{{ secrets.PATH }}#{{ parameters.x }}",
	} {
		if err := CheckWebhook("config.operation", "POST", u, nil); err != nil {
			t.Errorf("%s: %v", u, err)
		}
	}
}
