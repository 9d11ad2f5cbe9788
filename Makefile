# Gregor's developer commands. `make test` is the one CI runs (.ci/run).
.PHONY: all build test unit e2e conformance vet fmt clean

GO ?= go

all: build

## build: compile every package, and the gregor binary as ./gregor
build:
	$(GO) build ./...
	$(GO) build -o gregor ./cmd/gregor

## test: install test tools if missing, go test ./..., then the franz-go conformance suite
test:
	bash scripts/test.sh

## unit: go test ./... only (unit and end-to-end tests, no conformance suite)
unit:
	$(GO) test -count=1 -timeout=10m ./...

## e2e: the end-to-end tests only (test/e2e)
e2e:
	$(GO) test -count=1 -timeout=10m ./test/e2e

## conformance: build gregor, start it on free loopback ports, run franz-go's kgo suite
conformance:
	bash scripts/conformance.sh

vet:
	$(GO) vet ./...

fmt:
	gofmt -l -w cmd internal test

clean:
	rm -f gregor
