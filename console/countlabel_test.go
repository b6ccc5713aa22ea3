package console

import (
	"testing"

	"github.com/ontoflow/ontoflow/ontology"
)

func TestCountLabel(t *testing.T) {
	for _, c := range []struct {
		in   ontology.TypeCount
		want string
	}{
		{ontology.TypeCount{N: 0}, "0"},
		{ontology.TypeCount{N: 999}, "999"},
		{ontology.TypeCount{N: 1000}, "1,000"},
		{ontology.TypeCount{N: 1234567}, "1,234,567"},
		{ontology.TypeCount{N: 10001, About: true}, "about 10,000"},
		{ontology.TypeCount{N: 336789, About: true}, "about 330,000"},
		{ontology.TypeCount{N: 42, About: true}, "about 42"},
	} {
		if got := countLabel(c.in); got != c.want {
			t.Errorf("countLabel(%+v) = %q, want %q", c.in, got, c.want)
		}
	}
}
