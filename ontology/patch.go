package ontology

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ontoflow/ontoflow/apperr"
)

// Patch is a PATCH body: top-level members replace the current value's
// members of the same name (a JSON merge patch one level deep), then the
// result is decoded strictly, so unknown members are refused as on POST.
type Patch map[string]json.RawMessage

// apply overlays p on current (encoded to JSON) and decodes the result
// into out.
func (p Patch) apply(current any, out any) error {
	b, err := json.Marshal(current)
	if err != nil {
		return fmt.Errorf("encode current value: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("decode current value: %w", err)
	}
	for k, v := range p {
		if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			delete(m, k)
			continue
		}
		m[k] = v
	}
	merged, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode patched value: %w", err)
	}
	return decodeStrict(merged, out)
}

// decodeStrict decodes b into out refusing unknown members, with numbers
// as json.Number (as the API decodes bodies).
func decodeStrict(b []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	if err := dec.Decode(out); err != nil {
		msg := err.Error()
		if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
			f = strings.Trim(f, `"`)
			return apperr.New(apperr.InvalidJSON, "unknown field %q", f).
				WithDetails(apperr.Detail{Field: f, Reason: "unknown", Message: "unknown field"})
		}
		return apperr.New(apperr.InvalidJSON, "invalid patch: %v", err)
	}
	return nil
}
