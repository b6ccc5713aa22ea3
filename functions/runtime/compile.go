package runtime

import (
	"fmt"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Languages a function may be written in.
const (
	LangJavaScript = "javascript"
	LangTypeScript = "typescript"
)

// GlobalName is the global the compiled program leaves the module's
// exports in (default or handler is the function).
const GlobalName = "__ontoflow_module"

// target is the language level esbuild compiles to: ES2023, which the
// QuickJS in go.mod runs (TestES2023). Not ESNext: esbuild would then
// pass through syntax this QuickJS cannot parse (`using` declarations).
const target = api.ES2023

// Compile turns a module's source (`export default function (ctx)` or
// `export function handler(ctx)`) into a Program: TypeScript's types are
// stripped and both languages are wrapped as a script that assigns the
// exports to GlobalName, so QuickJS runs it without a module loader (no
// import can resolve). esbuild costs 2.5-4.6 ms per KB (measured here),
// so it runs at publish time, or once per inline source (Cache). A syntax
// error is a *Failure with the line and column (1-based).
func Compile(lang, source string) (Program, error) {
	if len(source) > MaxSourceBytes {
		return Program{}, &Failure{Reason: ReasonSource, Message: fmt.Sprintf("source is %d bytes, at most %d", len(source), MaxSourceBytes)}
	}
	loader := api.LoaderJS
	switch lang {
	case LangJavaScript, "js", "":
	case LangTypeScript, "ts":
		loader = api.LoaderTS
	default:
		return Program{}, &Failure{Reason: ReasonCompile, Message: fmt.Sprintf("unknown runtime %q (javascript or typescript)", lang)}
	}
	res := api.Transform(source, api.TransformOptions{
		Loader: loader, Format: api.FormatIIFE, GlobalName: GlobalName,
		Target: target, Sourcefile: "function." + map[api.Loader]string{api.LoaderJS: "js", api.LoaderTS: "ts"}[loader],
		LogLevel: api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		return Program{}, compileFailure(res.Errors[0])
	}
	code := string(res.Code)
	// An import would need a loader the sandbox does not have: refuse it
	// at compile time rather than fail every run.
	if strings.Contains(code, "require(") && strings.Contains(source, "import ") {
		return Program{}, &Failure{Reason: ReasonCompile, Message: "functions cannot import modules"}
	}
	return Program{Code: code}, nil
}

func compileFailure(m api.Message) *Failure {
	f := &Failure{Reason: ReasonCompile, Message: m.Text}
	if m.Location != nil {
		f.Line, f.Column = m.Location.Line, m.Location.Column+1
	}
	return f
}
