package functions

import (
	"time"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/functions/runtime"
)

// What the invoke_function kind (engine/kinds/invokefunction) hands the
// Service to run, and what it gets back: the Service's side of the
// contract, so this package needs nothing of the engine.

// Ref names the function to run: Inline, or Package + Version.
type Ref struct {
	Inline       *domain.InlineFunction `json:"inline,omitempty"`
	Package      string                 `json:"package,omitempty"`
	Version      string                 `json:"version,omitempty"`
	AutoUpgrade  bool                   `json:"auto_upgrade,omitempty"`
	Capabilities *Capabilities          `json:"capabilities,omitempty"`
}

// Capabilities are a function's limits and grants: durations as "5s",
// memory in MiB.
type Capabilities struct {
	Network   bool   `json:"network,omitempty"`
	Timeout   string `json:"timeout,omitempty"`
	MemoryMiB int    `json:"memory_mib,omitempty"`
}

// Limits are c as the runtime takes them (zero: defaults).
func (c *Capabilities) Limits() runtime.Limits {
	if c == nil {
		return runtime.Limits{}.Normalized()
	}
	d, _ := time.ParseDuration(c.Timeout)
	return runtime.Limits{Timeout: d, Memory: int64(c.MemoryMiB) << 20, Network: c.Network}.Normalized()
}

// Check refuses capabilities beyond the maxima, naming the member.
func (c *Capabilities) Check() error {
	if c == nil {
		return nil
	}
	if c.Timeout != "" {
		if d, err := time.ParseDuration(c.Timeout); err != nil || d <= 0 || d > runtime.MaxTimeout {
			return apperr.New(apperr.InvalidArgument, "capabilities.timeout must be a duration such as \"5s\", at most %s", runtime.MaxTimeout).
				WithDetails(apperr.Detail{Field: "capabilities.timeout", Reason: "range", Message: "at most " + runtime.MaxTimeout.String()})
		}
	}
	if c.MemoryMiB < 0 || c.MemoryMiB > runtime.MaxMemory>>20 {
		return apperr.New(apperr.InvalidArgument, "capabilities.memory_mib must be between 1 and %d", runtime.MaxMemory>>20).
			WithDetails(apperr.Detail{Field: "capabilities.memory_mib", Reason: "range", Message: "at most 256"})
	}
	return nil
}

// RunRequest is one run.
type RunRequest struct {
	Ref    Ref
	Input  runtime.Input
	Host   runtime.Host
	Limits runtime.Limits
	// Who and what, for the run's record.
	ActionTypeID, ActionName, ExecutionID, ActorID, TargetID string
	// Preview marks a what-if's run (network refused).
	Preview bool
	// CheckResult refuses a return value in a shape the caller does not
	// know; Run records the run failed with its error (reason
	// ResultInvalidReason) and returns that error.
	CheckResult func(out *runtime.Output) error
}

// ResultInvalidReason is the reason a run is recorded failed with when its
// return value was refused (FunctionResultInvalid).
const ResultInvalidReason = "result_invalid"

// RunError is a failed run of a resolved version.
type RunError struct {
	Package, Version string
	Err              error
}

func (e *RunError) Error() string { return e.Err.Error() }
func (e *RunError) Unwrap() error { return e.Err }

// RunResult is a successful run.
type RunResult struct {
	Package, Version string
	Output           *runtime.Output
}

// ObjectsRead is implemented by a host that knows the objects a run read
// (its record is redacted by them).
type ObjectsRead interface{ ObjectsRead() []string }
