// Package defaults holds the default of every setting: the flags and
// environment variables of package config show these values in --help,
// and the packages they configure fall back to the same constants when
// an option is left zero. It imports nothing, so config can read them
// without importing the packages it configures (docs/architecture.md,
// layer 0).
package defaults

import "time"

// Process and logging.
const (
	DataDir         = "./data"
	LogLevel        = "info"
	LogFormat       = "text"
	Markings        = "public,confidential,pii"
	ShutdownTimeout = 30 * time.Second
	// WorkerMetricsAddr is where `ontoflow worker` serves /metrics unless
	// --metrics-addr says otherwise (dev serves it on --http-addr only).
	WorkerMetricsAddr = "127.0.0.1:9464"
)

// Temporal.
const (
	TemporalAddress   = "127.0.0.1:7233"
	TemporalNamespace = "default"
	TaskQueue         = "ontoflow-actions"
	// TemporalPort and UIPort are the embedded server's (dev only).
	TemporalPort = 7233
	UIPort       = 8233
	// HistoryCacheSize is the embedded server's history cache: about
	// 100 MiB of heap at the ~50 KB a cached action execution takes.
	HistoryCacheSize = 2000
	AdminUser        = "admin"
)

// HTTP API.
const (
	HTTPAddr     = "127.0.0.1:8080"
	MaxBodyBytes = 4 << 20
	TokenTTL     = 24 * time.Hour
	MaxTokenTTL  = 30 * 24 * time.Hour
	// UserCacheTTL is how long a user row read for Basic authentication
	// is reused.
	UserCacheTTL = 2 * time.Second
)

// WebDAV.
const (
	WebDAVMaxUpload = 10 << 30
	WebDAVQuota     = 0 // unlimited
	// MaxLockTimeout was 24 h in webdav and 1 h in config before both
	// read it here.
	MaxLockTimeout  = time.Hour
	MaxLocksPerUser = 1000
	WebDAVChecksums = "auto"
	WebDAVStore     = "posix"
	WebDAVFsync     = false
	SweepInterval   = 5 * time.Minute
)

// Executions, batches and notifications.
const (
	BatchMaxItems    = 10000
	BatchSyncMax     = 100
	BatchChildItems  = 100
	BatchConcurrency = 8
	ExecuteTimeout   = 60 * time.Second
	// BranchTTL is how long a what-if branch lives before it is purged.
	BranchTTL = 7 * 24 * time.Hour
	// AbandonAfter is how long a keyed execution whose workflow never
	// started waits for the retry with its Idempotency-Key before the
	// sweep records it failed: long enough for any client's retry loop,
	// short enough that the action log does not show it queued for good.
	AbandonAfter = time.Hour
	// MaxRecipients bounds the recipients of one notification side
	// effect; one with more is recorded failed.
	MaxRecipients = 500
	// AutomationMaxDepth bounds chains of automations: an event caused by
	// an execution that this many firings led to fires nothing more (the
	// firing is recorded skipped).
	AutomationMaxDepth = 3
	// AutomationPoll is how often the automations' dispatcher looks for
	// undispatched events when it found none.
	AutomationPoll = 200 * time.Millisecond
	// AutomationEventRetention is how long a dispatched automation event
	// is kept before the dispatcher deletes it (its firings stay).
	AutomationEventRetention = 7 * 24 * time.Hour
)

// Request bounds: the longest list one request may make the server read,
// build or render. They are constants, not flags: they keep a single
// request's cost bounded whatever the operator sets (a real client stays
// far below them), and the filter cap must stay well under SQLite's
// expression depth of 1,000, which 999 filters reached (a 500). Each
// refusal is 400 InvalidArgument naming the parameter and its cap
// (README, "API conventions").
const (
	// PageSize and MaxPageSize are page_size's default and cap on every
	// API list.
	PageSize    = 50
	MaxPageSize = 500
	// MaxFilters bounds the filters of one object listing (the REST
	// listing's filter.* parameters, functions' ctx.ontology.query, the
	// explorer's filter row). Each is one SQL probe per candidate row; a
	// UI filters on a handful of columns, the explorer at most on each of
	// its MaxColumns, so 100 is ten times what a screen holds and a tenth
	// of SQLite's depth.
	MaxFilters = 100
	// MaxOrderBy is how many order_by entries a listing takes: one (ties
	// are broken by creation time, then id).
	MaxOrderBy = 1
	// MaxColumns bounds the entries of the explorer's ?cols=: each column
	// renders its sort and move links, so a page grows with its columns;
	// 100 columns are already several screens wide.
	MaxColumns = 100
	// MaxSearchBytes bounds a search term (?q=): a name, a key or a
	// phrase; a longer one is no search anyone types, and each is matched
	// against every searchable property.
	MaxSearchBytes = 1024
	// MaxExplorerQueryBytes bounds the explorer's query string, which each
	// of its links carries again (sort, move, show and hide, next page):
	// a page then weighs at most its links times 16 KiB, about 5 MB at
	// 100 columns, while a 100-column table whose filter row is submitted
	// (cols, and f. and v. per column) is under 10 KiB.
	MaxExplorerQueryBytes = 16 << 10
	// MaxPageNumber bounds the console's offset page numbers (?page= of
	// the action log and of the explorer's older links): 100,000 pages of
	// 50 skip five million rows, past any use, and their offset cannot
	// overflow into a negative OFFSET (Postgres: an error, a 500).
	MaxPageNumber = 100000
)

// OpenID Connect sign-in (off unless --oidc-issuer is set).
const (
	// OIDCScopes are the scopes asked of the identity provider.
	OIDCScopes = "openid,profile,email"
	// OIDCUsernameClaim is the claim a user's name comes from.
	OIDCUsernameClaim = "preferred_username"
	// OIDCGroupsClaim is the claim holding the user's groups.
	OIDCGroupsClaim = "groups"
	// OIDCLabel names the provider on the sign-in button.
	OIDCLabel = "your organization's account"
	// PasswordLogin keeps the console's password form beside the button.
	PasswordLogin = true
)

// Aggregation bounds (ontology.Store.Aggregate; docs/ontology.md,
// "Aggregations"): a group_by of at most MaxGroupByLevels levels, an
// answer of at most MaxAggregationGroups groups (more is 400
// InvalidArgument, reason "too_many_groups": narrow the filters, add
// max_groups or widen the buckets), and at most MaxAggregationMetrics
// metrics.
const (
	MaxGroupByLevels      = 3
	MaxAggregationGroups  = 10000
	MaxAggregationMetrics = 20
)

// ExactDistinctUpTo is how many distinct values an approximate_distinct
// metric counts exactly in each group when the request allows
// approximation (accuracy allow_approximate); beyond it the group keeps
// a HyperLogLog sketch of 2^14 registers (16 KiB, a standard error of
// about 0.8%) instead of every value, and the answer says approximate.
const ExactDistinctUpTo = 10000
