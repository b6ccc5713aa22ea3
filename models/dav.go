package models

// davModels are the WebDAV records (locks, dead properties); see dav.go.
var davModels = []any{}
