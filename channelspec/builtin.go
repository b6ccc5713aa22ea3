package channelspec

// Builtin describes the channels Ontoflow ships, in the order their names
// are listed to users: in-app (package notifications' InApp), e-mail,
// Slack and Teams (notifications/channels). Their implementations are
// registered at assembly (app/app.go's channels()); an e-mail channel
// without an SMTP server is described still, so definitions naming it
// stay valid, and its deliveries are recorded skipped.
func Builtin() []Spec {
	return []Spec{
		{Name: "in_app"},
		{Name: "email"},
		{Name: "slack", Destination: true, OwnDestination: true},
		{Name: "teams", Destination: true, OwnDestination: true},
	}
}
