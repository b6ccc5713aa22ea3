package devserver

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	commonpb "go.temporal.io/api/common/v1"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/api/operatorservice/v1"
	"go.temporal.io/api/serviceerror"
	taskqueuepb "go.temporal.io/api/taskqueue/v1"
	"go.temporal.io/api/workflowservice/v1"
	"go.temporal.io/sdk/client"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
)

const (
	probeInterval = 50 * time.Millisecond
	probeTimeout  = 2 * time.Second
)

// waitReady blocks until the frontend serves the namespace, history and
// matching answer, and all search attributes are registered and usable in
// visibility queries. Missing search attributes are added here (a namespace
// that already existed in the database is not touched by CreateNamespaces).
func waitReady(ctx context.Context, addr, ns string, sas map[string]enumspb.IndexedValueType, nsRefresh time.Duration) error {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	wf := workflowservice.NewWorkflowServiceClient(conn)
	op := operatorservice.NewOperatorServiceClient(conn)

	// 1. Frontend up and namespace loaded.
	if err := retry(ctx, "describe namespace", func(c context.Context) error {
		_, err := wf.DescribeNamespace(c, &workflowservice.DescribeNamespaceRequest{Namespace: ns})
		return err
	}); err != nil {
		return err
	}

	// 2. History reachable (NotFound is the healthy answer).
	if err := retry(ctx, "history probe", func(c context.Context) error {
		_, err := wf.DescribeWorkflowExecution(c, &workflowservice.DescribeWorkflowExecutionRequest{
			Namespace: ns,
			Execution: &commonpb.WorkflowExecution{WorkflowId: "devserver-readiness-probe"},
		})
		// NotFound is the healthy answer; the raw gRPC client returns it as
		// a status, not as a serviceerror.
		if hasCode(err, codes.NotFound) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}

	// 3. Matching reachable.
	if err := retry(ctx, "matching probe", func(c context.Context) error {
		_, err := wf.DescribeTaskQueue(c, &workflowservice.DescribeTaskQueueRequest{
			Namespace:     ns,
			TaskQueue:     &taskqueuepb.TaskQueue{Name: "devserver-readiness-probe", Kind: enumspb.TASK_QUEUE_KIND_NORMAL},
			TaskQueueType: enumspb.TASK_QUEUE_TYPE_WORKFLOW,
		})
		// NotFound is the healthy answer; the raw gRPC client returns it as
		// a status, not as a serviceerror.
		if hasCode(err, codes.NotFound) {
			return nil
		}
		return err
	}); err != nil {
		return err
	}

	return ensureSearchAttributes(ctx, op, wf, ns, sas, nsRefresh)
}

// EnsureSearchAttributes registers the missing custom search attributes sas
// on namespace ns of the cluster c talks to (an external cluster in
// production; the embedded server does this itself at start). Attributes
// already present are kept; a type conflict is an error.
func EnsureSearchAttributes(ctx context.Context, c client.Client, ns string, sas map[string]enumspb.IndexedValueType) error {
	ctx, cancel := context.WithTimeout(ctx, readinessTimeout)
	defer cancel()
	if err := ensureSearchAttributes(ctx, c.OperatorService(), c.WorkflowService(), ns, sas, 2*time.Second); err != nil {
		return fmt.Errorf("register search attributes on namespace %s: %w", ns, err)
	}
	return nil
}

func ensureSearchAttributes(ctx context.Context, op operatorservice.OperatorServiceClient, wf workflowservice.WorkflowServiceClient,
	ns string, sas map[string]enumspb.IndexedValueType, nsRefresh time.Duration) error {
	if len(sas) == 0 {
		return nil
	}

	// Search attributes: add the missing ones, refuse type conflicts.
	var current map[string]enumspb.IndexedValueType
	if err := retry(ctx, "list search attributes", func(c context.Context) error {
		resp, err := op.ListSearchAttributes(c, &operatorservice.ListSearchAttributesRequest{Namespace: ns})
		if err != nil {
			return err
		}
		current = resp.GetCustomAttributes()
		return nil
	}); err != nil {
		return err
	}
	missing := map[string]enumspb.IndexedValueType{}
	for name, typ := range sas {
		have, ok := current[name]
		if !ok {
			missing[name] = typ
			continue
		}
		if have != typ {
			return fmt.Errorf("search attribute %q is registered as %s, configured as %s (a search attribute's type cannot be changed)", name, have, typ)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if err := retry(ctx, "add search attributes", func(c context.Context) error {
		_, err := op.AddSearchAttributes(c, &operatorservice.AddSearchAttributesRequest{
			Namespace:        ns,
			SearchAttributes: missing,
		})
		if hasCode(err, codes.AlreadyExists) {
			return nil
		}
		if hasCode(err, codes.InvalidArgument) { // e.g. no free column of that type left
			return permanent{err}
		}
		return err
	}); err != nil {
		return err
	}

	// Wait until the frontend accepts queries on the new attributes, then
	// one namespace refresh interval so that history (which validates
	// UpsertSearchAttributes) has reloaded the namespace as well.
	names := make([]string, 0, len(missing))
	for name := range missing {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		query := fmt.Sprintf("%s IS NULL", name)
		if err := retry(ctx, "query on search attribute "+name, func(c context.Context) error {
			_, err := wf.ListWorkflowExecutions(c, &workflowservice.ListWorkflowExecutionsRequest{
				Namespace: ns,
				PageSize:  1,
				Query:     query,
			})
			return err
		}); err != nil {
			return err
		}
	}
	select {
	case <-time.After(nsRefresh + 200*time.Millisecond):
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// permanent marks an error that retry must not retry.
type permanent struct{ error }

func (p permanent) Unwrap() error { return p.error }

// retry calls f until it succeeds, returns a permanent error, or ctx ends.
func retry(ctx context.Context, what string, f func(context.Context) error) error {
	var last error
	for {
		c, cancel := context.WithTimeout(ctx, probeTimeout)
		err := f(c)
		cancel()
		if err == nil {
			return nil
		}
		var p permanent
		if errors.As(err, &p) {
			return fmt.Errorf("%s: %w", what, p.error)
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s: %w (last error: %v)", what, ctx.Err(), last)
		case <-time.After(probeInterval):
		}
	}
}

// hasCode reports whether err carries the gRPC code c, whether it comes
// from a raw gRPC client (a status) or from the SDK (a serviceerror).
func hasCode(err error, c codes.Code) bool {
	return err != nil && serviceerror.ToStatus(err).Code() == c
}
