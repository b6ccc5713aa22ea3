package models

// ontologyModels are the ontology records; see ontology.go.
var ontologyModels = []any{}
