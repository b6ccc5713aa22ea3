package models

// actionModels are the action engine records; see action.go.
var actionModels = []any{}
