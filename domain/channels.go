package domain

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/ontoflow/ontoflow/channelspec"
)

// WithChannels is r judging notification side effects by the channels of
// chs (nil: the built-in ones): assembly gives the store the kinds and the
// channels it registered, so a definition naming a registered channel
// validates, and one naming an unregistered channel does not.
func (r *Kinds) WithChannels(chs *channelspec.Registry) *Kinds {
	out := &Kinds{channels: chs}
	if r != nil {
		out.byName, out.names = r.byName, r.names
	}
	return out
}

// Channels are the notification channels definitions may name.
func (r *Kinds) Channels() *channelspec.Registry {
	if r == nil {
		return nil
	}
	return r.channels
}

// sideEffectFields is NotificationSideEffect without its JSON methods.
type sideEffectFields NotificationSideEffect

// MarshalJSON writes the side effect's members, then each destination as
// the member its channel names (channelspec.Spec.DestinationMember), in
// the order of the channels' names: the form stored before destinations
// were keyed by channel.
func (n NotificationSideEffect) MarshalJSON() ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	// The caller's encoder escapes HTML or not as it chooses; escaping
	// here would decide it for them.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(sideEffectFields(n)); err != nil {
		return nil, err
	}
	out := bytes.Clone(bytes.TrimSuffix(bytes.TrimSpace(buf.Bytes()), []byte("}")))
	for _, ch := range slices.Sorted(maps.Keys(n.Destinations)) {
		if n.Destinations[ch] == "" {
			continue
		}
		buf.Reset()
		if err := enc.Encode(map[string]string{channelspec.Spec{Name: ch}.DestinationMember(): n.Destinations[ch]}); err != nil {
			return nil, err
		}
		member := bytes.TrimSpace(buf.Bytes())
		if !bytes.HasSuffix(out, []byte("{")) {
			out = append(out, ',')
		}
		out = append(out, member[1:len(member)-1]...)
	}
	return append(out, '}'), nil
}

// UnmarshalJSON reads the members of a side effect strictly (an unknown
// member is an error, numbers are json.Number, as the API decodes bodies)
// and each "<channel>_webhook" member into Destinations; whether the
// channel takes one is the definition's check.
func (n *NotificationSideEffect) UnmarshalJSON(data []byte) error {
	var members map[string]json.RawMessage
	if err := json.Unmarshal(data, &members); err != nil {
		return err
	}
	dests := map[string]string{}
	for m, raw := range members {
		ch, ok := channelspec.ChannelOfMember(m)
		if !ok {
			continue
		}
		var ref string
		if err := json.Unmarshal(raw, &ref); err != nil {
			return fmt.Errorf("decode %s: %w", m, err)
		}
		if ref != "" {
			dests[ch] = ref
		}
		delete(members, m)
	}
	rest, err := json.Marshal(members)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(rest))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	var f sideEffectFields
	if err := dec.Decode(&f); err != nil {
		return err
	}
	*n = NotificationSideEffect(f)
	if len(dests) > 0 {
		n.Destinations = dests
	}
	return nil
}

// checkChannels checks a side effect's channels and destinations against
// the registered channels: each named channel registered, each
// destination a secret reference for a channel that takes one.
func (v *defValidator) checkChannels(f string, n NotificationSideEffect) error {
	chs := v.kinds.Channels()
	if err := checkList(f+".channels", n.Channels, chs.Names()); err != nil {
		return err
	}
	for _, ch := range slices.Sorted(maps.Keys(n.Destinations)) {
		spec, ok := chs.Get(ch)
		member := channelspec.Spec{Name: ch}.DestinationMember()
		if !ok || !spec.Destination {
			return defErr(f+"."+member, "not_allowed", "%s: no channel %q posts to a destination of its own", member, clip(ch))
		}
		if !secretRefRE.MatchString(n.Destinations[ch]) {
			return defErr(f+"."+member, "invalid_secret_reference", "a chat destination is a secret reference, {{ secrets.NAME }}: the webhook URL is a credential")
		}
	}
	return nil
}
