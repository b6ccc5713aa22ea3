package models

import "gorm.io/gorm"

// Tx is a unit of work: the database transaction an operation runs in, as
// the extension contracts pass it (engine.Op.Tx, engine.Ontology.In,
// engine.TxChannel, a function's reads), so that an operation kind or a
// channel holds its transaction without being tied to gorm: only stores
// open it (Gorm). The zero Tx is none: each call runs on the store's own
// connections, as a preview reads.
type Tx struct{ db *gorm.DB }

// InTx is the unit of work of the transaction db (nil: none).
func InTx(db *gorm.DB) Tx { return Tx{db: db} }

// Gorm is the transaction, for the stores that run statements in it (nil
// for none).
func (t Tx) Gorm() *gorm.DB { return t.db }

// None reports whether t is no transaction.
func (t Tx) None() bool { return t.db == nil }
