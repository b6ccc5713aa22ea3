package secrets_test

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/secrets"
)

type mapResolver map[string]string

func (m mapResolver) Resolve(_ context.Context, name string) (string, error) {
	if v, ok := m[name]; ok {
		return v, nil
	}
	return "", apperr.New(apperr.SecretNotFound, "secret %q not found", name)
}

func TestRefs(t *testing.T) {
	got := secrets.Refs("Bearer {{ secrets.TOKEN }} and {{secrets.B}} {{  secrets.TOKEN\t}} {{ secrets.bad-name }} {{ params.x }}")
	if want := []string{"TOKEN", "B"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("Refs = %v, want %v", got, want)
	}
	if got := secrets.Refs("no references"); got != nil {
		t.Fatalf("Refs of plain text = %v", got)
	}
	if secrets.Ref("X") != "{{ secrets.X }}" {
		t.Fatal(secrets.Ref("X"))
	}
}

func TestExpandAndRedact(t *testing.T) {
	ctx := context.Background()
	e := secrets.NewExpander(mapResolver{"TOKEN": "s3cr&t/v<al>ue", "SHORT": "abc"})
	got, err := e.Expand(ctx, "Bearer {{ secrets.TOKEN }}; {{secrets.TOKEN}} {{ secrets.bad-name }}")
	if err != nil || got != "Bearer s3cr&t/v<al>ue; s3cr&t/v<al>ue {{ secrets.bad-name }}" {
		t.Fatalf("Expand = %q, %v", got, err)
	}
	if _, err := e.Expand(ctx, "{{ secrets.MISSING }}"); apperr.CodeOf(err) != apperr.SecretNotFound {
		t.Fatalf("missing secret: %v", err)
	}
	// Every form the value may take in a record is scrubbed.
	in := `raw s3cr&t/v<al>ue json "s3cr\u0026t/v\u003cal\u003eue" query s3cr%26t%2Fv%3Cal%3Eue path s3cr&t%2Fv%3Cal%3Eue` +
		` url-path s3cr&t/v%3Cal%3Eue`
	out := e.Redact(in)
	if strings.Contains(out, "s3cr") || strings.Count(out, "[secret:TOKEN]") != 5 {
		t.Fatalf("Redact = %q", out)
	}
	// Only what this Expander resolved is known to it.
	if out := e.Redact("abc"); out != "abc" {
		t.Fatalf("unresolved secret redacted: %q", out)
	}
	if v, err := e.Resolve(ctx, "SHORT"); err != nil || v != "abc" {
		t.Fatal(v, err)
	}
	if out := e.Redact("xabcx"); out != "x[secret:SHORT]x" {
		t.Fatalf("Redact after Resolve = %q", out)
	}
}

func TestCheckRefs(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		st := secrets.NewStore(db, keyring(t, secrets.GenerateKey()))
		if _, err := st.Create(ctx, "PRESENT", secrets.Spec{Value: ptr("v")}, ""); err != nil {
			t.Fatal(err)
		}
		if err := st.CheckRefs(ctx, "operation.url", "https://x/{{ secrets.PRESENT }}"); err != nil {
			t.Fatalf("present: %v", err)
		}
		err := st.CheckRefs(ctx, "operation.headers.Authorization", "Bearer {{ secrets.PRESENT }} {{ secrets.ABSENT }}")
		e, ok := apperr.As(err)
		if !ok || e.Code != apperr.InvalidDefinition || e.Code.Status() != 400 || len(e.Details) != 1 ||
			e.Details[0].Field != "operation.headers.Authorization" || e.Details[0].Reason != "missing_secret" ||
			!strings.Contains(e.Message, "ABSENT") {
			t.Fatalf("missing secret: %#v", err)
		}
		err = st.CheckRefs(ctx, "operation.url", "{{ secrets.9x }}")
		if e, ok := apperr.As(err); !ok || e.Code != apperr.InvalidDefinition || e.Details[0].Reason != "invalid_secret_reference" {
			t.Fatalf("malformed reference: %v", err)
		}
	})
}
