package models

import (
	"context"
	"path/filepath"
	"testing"
	"time"
)

func TestTextBlockIsTheMillisecond(t *testing.T) {
	for _, c := range []struct{ created, ms int64 }{{0, 0}, {999, 0}, {1000, 1}, {-1, -1}, {-1000, -1}, {-1001, -2},
		{time.Date(2026, 11, 27, 9, 0, 0, 123456000, time.UTC).UnixMicro(), time.Date(2026, 11, 27, 9, 0, 0, 123000000, time.UTC).UnixMilli()}} {
		lo, hi := TextBlock(c.created)
		if lo != c.ms<<textLabelBits || hi != (c.ms+1)<<textLabelBits {
			t.Errorf("TextBlock(%d) = [%d, %d), want the block of millisecond %d", c.created, lo, hi, c.ms)
		}
	}
}

// A millisecond whose labels are used up by updates (labels of deleted
// texts are not reused) is renumbered: its live texts keep their order
// and stay searchable, and the new ones follow them.
func TestTextLabelsRenumberAFullMillisecond(t *testing.T) {
	defer func(r int64) { textBlockRoom = r }(textBlockRoom)
	textBlockRoom = 4
	ctx := context.Background()
	db, err := Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := Migrate(ctx, db); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC).UnixMicro()
	text := func(b byte, s string) ObjectText {
		return ObjectText{ObjectID: []byte{b, 15: 0}, Prop: 1, Created: at + int64(b), Txt: s}
	}
	write := func(rows ...ObjectText) {
		t.Helper()
		if err := InsertObjectTexts(ctx, db, rows); err != nil {
			t.Fatal(err)
		}
	}
	write(text(1, "one x"), text(2, "two x"), text(3, "three x"))
	// Updates of texts 1 and 2 (deleted, written again) use up the room.
	for _, b := range []byte{1, 2} {
		if err := db.Where("object_id = ?", []byte{b, 15: 0}).Delete(&ObjectText{}).Error; err != nil {
			t.Fatal(err)
		}
		write(text(b, "again x"))
	}
	var ids []int64
	var txts []string
	db.Model(&ObjectText{}).Order("id").Pluck("id", &ids)
	db.Model(&ObjectText{}).Order("id").Pluck("txt", &txts)
	lo, _ := TextBlock(at)
	if len(ids) != 3 || ids[0] != lo || ids[2] != lo+2 || txts[0] != "three x" || txts[2] != "again x" {
		t.Fatalf("after renumbering: ids %v (block from %d), texts %v", ids, lo, txts)
	}
	var matches []string
	db.Raw("SELECT txt FROM object_texts_fts WHERE object_texts_fts MATCH 'again' ORDER BY rowid").Scan(&matches)
	if len(matches) != 2 {
		t.Fatalf("the renumbered texts are not all searchable: %v", matches)
	}
	// Five texts of one millisecond do not fit a room of four.
	if err := InsertObjectTexts(ctx, db, []ObjectText{text(4, "a"), text(5, "b")}); err == nil {
		t.Fatal("five texts in a room of four were labelled")
	}
}
