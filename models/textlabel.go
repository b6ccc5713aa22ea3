package models

import (
	"context"
	"fmt"
	"sort"

	"gorm.io/gorm"
)

// Object texts' ids are labels in creation order (index version 5), so
// that SQLite's FTS5 table, which returns a search's matches in id order
// and can stop after a page, returns them in the listing's order: a
// search costs the page it fills, not every match of the type (docs/
// ontology.md, "The query path"). A label is the creation time's
// millisecond shifted left by textLabelBits, plus a sequence number
// within that millisecond; texts of one millisecond are in no particular
// order among themselves, and the query sorts them (TextBlock).
const textLabelBits = 20

// textBlockRoom is how many labels a millisecond has (smaller in a test
// of the renumbering).
var textBlockRoom int64 = 1 << textLabelBits

// textLabelMaxMilli bounds the millisecond so that a label fits an int64
// (± 2^42 ms: about 139 years either side of 1970).
const textLabelMaxMilli = int64(1) << 42

// TextBlock is the range [lo, hi) of the text labels of objects created
// in the millisecond of created (Unix µs, CreatedKey).
func TextBlock(created int64) (lo, hi int64) {
	ms := created / 1000
	if created < 0 && created%1000 != 0 {
		ms-- // floor, so a block is one millisecond before 1970 too
	}
	return ms << textLabelBits, (ms + 1) << textLabelBits
}

// labelTexts gives rows ids after the largest label of their
// millisecond in object_texts (one query per millisecond the rows are
// in).
func labelTexts(ctx context.Context, tx *gorm.DB, rows []ObjectText) error {
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Created < rows[j].Created })
	for i := 0; i < len(rows); {
		if ms := rows[i].Created / 1000; ms >= textLabelMaxMilli || ms <= -textLabelMaxMilli {
			return fmt.Errorf("label the text of an object created at %d µs: outside the text index's years", rows[i].Created)
		}
		lo, hi := TextBlock(rows[i].Created)
		j := i + 1
		for j < len(rows) && rows[j].Created < (hi>>textLabelBits)*1000 {
			j++
		}
		next, err := nextLabel(ctx, tx, lo, hi, int64(j-i))
		if err != nil {
			return err
		}
		for k := i; k < j; k++ {
			rows[k].ID = next
			next++
		}
		i = j
	}
	return nil
}

// nextLabel is the first of n free labels after the largest in [lo, hi).
// Labels of deleted texts are not reused, so a millisecond whose labels
// run out (a million updates of texts of objects created in it) is
// renumbered first: its few live rows get the first labels.
func nextLabel(ctx context.Context, tx *gorm.DB, lo, hi, n int64) (int64, error) {
	var last *int64
	if err := tx.WithContext(ctx).Raw("SELECT MAX(id) FROM object_texts WHERE id >= ? AND id < ?", lo, hi).Scan(&last).Error; err != nil {
		return 0, fmt.Errorf("label texts: %w", err)
	}
	next := lo
	if last != nil {
		next = *last + 1
	}
	if next == 0 {
		next = 1 // gorm writes no id of 0 (the first label of 1970)
	}
	end := lo + textBlockRoom
	if next+n <= end {
		return next, nil
	}
	var live []ObjectText
	if err := tx.WithContext(ctx).Where("id >= ? AND id < ?", lo, hi).Order("id").Find(&live).Error; err != nil {
		return 0, fmt.Errorf("renumber texts: %w", err)
	}
	if lo+int64(len(live))+n > end {
		return 0, fmt.Errorf("label texts: more than %d texts of objects created in one millisecond", textBlockRoom)
	}
	if err := tx.WithContext(ctx).Where("id >= ? AND id < ?", lo, hi).Delete(&ObjectText{}).Error; err != nil {
		return 0, fmt.Errorf("renumber texts: %w", err)
	}
	for i := range live {
		live[i].ID = lo + int64(i)
	}
	if len(live) > 0 {
		if err := tx.WithContext(ctx).CreateInBatches(live, 500).Error; err != nil {
			return 0, fmt.Errorf("renumber texts: %w", err)
		}
	}
	return lo + int64(len(live)), nil
}
