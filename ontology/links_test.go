package ontology_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"math/rand"
	"slices"
	"strconv"
	"testing"
	"time"

	"gorm.io/gorm"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/internal/harness/testdb"
	"github.com/ontoflow/ontoflow/models"
	"github.com/ontoflow/ontoflow/ontology"
)

// linkFixture is a graph for the links listing's tests: objects of one
// type with random markings and organizations, linked at random by two
// link types (self-links included), many links sharing a creation time
// (ties the keyset must break by id), and two links whose far end does
// not exist.
type linkFixture struct {
	s   *ontology.Store
	db  *gorm.DB
	ids []string
}

func newLinkFixture(t *testing.T, db *gorm.DB, r *rand.Rand, objects, links int) linkFixture {
	ctx := context.Background()
	s := ontology.NewStore(db, nil, builtinKinds)
	var sp ontology.ObjectTypeSpec
	decodeInto(t, `{"name":"Node","properties":[{"name":"n","type":"integer"}]}`, &sp)
	ok(s.CreateObjectType(ctx, admin.ID, sp))(t)
	for _, name := range []string{"rel", "rel2"} {
		ok(s.CreateLinkType(ctx, admin.ID, ontology.LinkTypeSpec{Name: name, SourceObjectTypeID: "Node",
			TargetObjectTypeID: "Node", Cardinality: "many_to_many"}))(t)
	}
	f := linkFixture{s: s, db: db}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	loadAnalyzed(t, db, func(tx *gorm.DB) error {
		for i := 0; i < objects; i++ {
			o, err := s.CreateObject(ctx, tx, "Node", map[string]any{"n": i}, pick(r, []string{"public", "confidential", "pii"}), admin.ID, pick(r, diffOrgs))
			if err != nil {
				return err
			}
			f.ids = append(f.ids, o.ID)
		}
		for i := 0; i < links; i++ {
			id, err := s.CreateLink(ctx, tx, pick(r, []string{"rel", "rel2"}), pick(r, f.ids), pick(r, f.ids))
			if apperr.Is(err, apperr.Conflict) {
				continue // the pair is linked already
			}
			if err != nil {
				return err
			}
			at := base.Add(time.Duration(r.Intn(links/4+1)) * time.Microsecond)
			if err := tx.Model(&models.Link{}).Where("id = ?", id).Update("created_at", at).Error; err != nil {
				return err
			}
		}
		// Links to an object that does not exist: left out for all but
		// admins, as before.
		lt := ok(s.LinkType(ctx, "rel"))(t)
		for i, end := range []string{"source", "target"} {
			l := models.Link{ID: fmt.Sprintf("aaaaaaaa-0000-4000-8000-00000000000%d", i), LinkTypeID: lt.ID,
				SourceID: f.ids[0], TargetID: f.ids[0], CreatedAt: base}
			if end == "source" {
				l.SourceID = "bbbbbbbb-0000-4000-8000-000000000001"
			} else {
				l.TargetID = "bbbbbbbb-0000-4000-8000-000000000001"
			}
			l.SourceSlot, l.TargetSlot = l.ID, l.ID
			if err := tx.Create(&l).Error; err != nil {
				return err
			}
		}
		return nil
	})
	return f
}

// linkReaders are the callers the differential test lists links as:
// an admin and every clearance in each organization (one not a level).
func linkReaders() []*models.User {
	us := []*models.User{admin}
	for i, c := range []string{"public", "confidential", "pii", "nonesuch"} {
		for j, org := range diffOrgs {
			us = append(us, &models.User{ID: fmt.Sprintf("00000000-0000-4000-8000-0000000001%d%d", i, j), Username: c + "@" + org,
				Roles: models.NewJSON([]string{"viewer"}), Clearance: c, Organization: org})
		}
	}
	return us
}

func linkIDs(ls []models.Link) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.ID
	}
	return out
}

// TestObjectLinksMatchOracle is the links listing's differential test:
// random links, random readers, every direction and link type, paged by
// keyset tokens, by the offset tokens of the listing before them and by
// offset, each answer compared with the listing as it was (every link of
// the object read and filtered by the read rule in Go).
func TestObjectLinksMatchOracle(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		ctx := context.Background()
		r := rand.New(rand.NewSource(27))
		f := newLinkFixture(t, db, r, 40, 600)
		readers := linkReaders()
		for round := 0; round < diffCount(400); round++ {
			u := pick(r, readers)
			obj := pick(r, f.ids)
			q := ontology.LinkQuery{Direction: pick(r, []string{"", "", "outgoing", "incoming"}), LinkType: pick(r, []string{"", "", "rel", "rel2"})}
			all := q
			all.Limit = 1 << 20
			want, werr := f.s.OracleObjectLinks(ctx, u, "Node", obj, all)
			what := fmt.Sprintf("round %d: links of %s as %s, %+v", round, obj, u.Username, q)
			got, gerr := f.pageAll(ctx, u, obj, q, 1+r.Intn(7))
			if apperr.CodeOf(werr) != apperr.CodeOf(gerr) || (werr == nil) != (gerr == nil) {
				t.Fatalf("%s: error %v, want %v", what, gerr, werr)
			}
			if !slices.Equal(got, linkIDs(want)) {
				t.Fatalf("%s, by keyset pages:\n got %v\nwant %v", what, got, linkIDs(want))
			}
			if werr != nil {
				continue
			}
			q.Offset, q.Limit = r.Intn(len(want)+2), 1+r.Intn(10)
			wantPage := linkIDs(ok(f.s.OracleObjectLinks(ctx, u, "Node", obj, q))(t))
			if gotPage := linkIDs(ok(f.s.ObjectLinks(ctx, u, "Node", obj, q))(t)); !slices.Equal(gotPage, wantPage) {
				t.Fatalf("%s, offset %d limit %d:\n got %v\nwant %v", what, q.Offset, q.Limit, gotPage, wantPage)
			}
			// An offset token from before keyset pages, then keyset on.
			byToken := q
			byToken.PageToken, byToken.Offset = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(q.Offset))), 0
			p := ok(f.s.ObjectLinksPage(ctx, u, "Node", obj, byToken))(t)
			if !slices.Equal(linkIDs(p.Items), wantPage) {
				t.Fatalf("%s, offset token %d limit %d:\n got %v\nwant %v", what, q.Offset, q.Limit, linkIDs(p.Items), wantPage)
			}
			if want := q.Offset+q.Limit < len(want); want != (p.NextPageToken != "") {
				t.Fatalf("%s, offset token %d limit %d: next page token %q, want one: %v", what, q.Offset, q.Limit, p.NextPageToken, want)
			}
		}
	})
}

// pageAll lists the links by keyset pages of size, to the end.
func (f linkFixture) pageAll(ctx context.Context, u *models.User, obj string, q ontology.LinkQuery, size int) ([]string, error) {
	out := []string{}
	q.Limit = size
	for {
		p, err := f.s.ObjectLinksPage(ctx, u, "Node", obj, q)
		if err != nil {
			return nil, err
		}
		out = append(out, linkIDs(p.Items)...)
		if p.NextPageToken == "" {
			return out, nil
		}
		if len(p.Items) != size {
			return nil, fmt.Errorf("a page of %d before the end, want %d", len(p.Items), size)
		}
		q.PageToken = p.NextPageToken
	}
}

// TestObjectLinksBadToken refuses a token this listing did not issue.
func TestObjectLinksBadToken(t *testing.T) {
	testdb.Each(t, func(t *testing.T, db *gorm.DB) {
		f := newLinkFixture(t, db, rand.New(rand.NewSource(1)), 3, 4)
		for _, tok := range []string{"!", base64.RawURLEncoding.EncodeToString([]byte("-1")), base64.RawURLEncoding.EncodeToString([]byte(`{"v":1,"t":1,"i":"x"}`))} {
			_, err := f.s.ObjectLinksPage(context.Background(), admin, "Node", f.ids[0], ontology.LinkQuery{PageToken: tok, Limit: 5})
			mustCode(t, err, apperr.InvalidArgument, "page_token")
		}
	})
}
