# The two commands of the README:
#   make dev    run everything in one process on embedded defaults
#   make test   run the tests (set TEST_DATABASE_URL to also cover Postgres)
GO ?= go
export GOTOOLCHAIN ?= local

.PHONY: dev test build vet bench-actions bench-webdav

dev:
	$(GO) run ./cmd/ontoflow dev

# -p 2: two cores; the packages that embed the Temporal server are few
# but heavy to link.
test:
	$(GO) test -p 2 -timeout 30m ./...

build:
	CGO_ENABLED=0 $(GO) build -o bin/ontoflow ./cmd/ontoflow

vet:
	$(GO) vet ./...
