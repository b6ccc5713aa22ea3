package api

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
)

// A body of the wrong JSON type is refused in JSON's words, never Go's
// (issue 46: a message read "expected map[string]interface {}").
func TestJSONTypeErrorsSpeakJSON(t *testing.T) {
	var into struct {
		Parameters map[string]any   `json:"parameters"`
		N          int64            `json:"n"`
		F          float64          `json:"f"`
		Tags       []string         `json:"tags"`
		OK         bool             `json:"ok"`
		Name       string           `json:"name"`
		Num        json.Number      `json:"num"`
		Sub        *struct{ A int } `json:"sub"`
	}
	goish := regexp.MustCompile(`map\[|interface|int64|float64|\[\]string|struct|json\.Number|\*`)
	for body, want := range map[string]string{
		`{"parameters":"x"}`: `field "parameters": expected an object, got a string`,
		`{"n":3.5}`:          `field "n": expected a whole number, got a number 3.5`,
		`{"f":"1"}`:          `field "f": expected a number, got a string`,
		`{"tags":{}}`:        `field "tags": expected an array, got an object`,
		`{"ok":1}`:           `field "ok": expected true or false, got a number`,
		`{"name":[1]}`:       `field "name": expected a string, got an array`,
		`{"num":true}`:       `field "num": expected a number, got true or false`,
		`{"sub":[]}`:         `field "sub": expected an object, got an array`,
	} {
		dec := json.NewDecoder(bytes.NewReader([]byte(body)))
		dec.UseNumber()
		err := jsonError(dec.Decode(&into))
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(want)) || goish.MatchString(err.Error()) {
			t.Errorf("%s: %v, want %q and no Go type", body, err, want)
		}
	}
}
