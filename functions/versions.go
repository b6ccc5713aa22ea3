package functions

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/google/uuid"
	"golang.org/x/mod/semver"

	"github.com/ontoflow/ontoflow/apperr"
	"github.com/ontoflow/ontoflow/domain"
	"github.com/ontoflow/ontoflow/functions/runtime"
	"github.com/ontoflow/ontoflow/models"
)

// PackageSpec is the body of creating a package.
type PackageSpec struct {
	Name         string        `json:"name"`
	Description  string        `json:"description"`
	Runtime      string        `json:"runtime"`
	Capabilities *Capabilities `json:"capabilities"`
}

// VersionSpec is the body of publishing a version.
type VersionSpec struct {
	Version string `json:"version"`
	Source  string `json:"source"`
}

// PackageView is a package with its versions (newest first).
type PackageView struct {
	models.FunctionPackage
	Versions []string `json:"versions"`
}

func invalid(field, reason, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	return apperr.New(apperr.InvalidArgument, "%s: %s", field, msg).WithDetails(apperr.Detail{Field: field, Reason: reason, Message: msg})
}

// CreatePackage creates a package.
func (s *Service) CreatePackage(ctx context.Context, actor *models.User, sp PackageSpec) (*models.FunctionPackage, error) {
	if !domain.NameRE.MatchString(sp.Name) {
		return nil, invalid("name", "format", "name %q must match %s", sp.Name, domain.NameRE)
	}
	if sp.Runtime != runtime.LangJavaScript && sp.Runtime != runtime.LangTypeScript {
		return nil, invalid("runtime", "value", "runtime must be javascript or typescript")
	}
	if err := sp.Capabilities.Check(); err != nil {
		return nil, err
	}
	caps := map[string]any{}
	if c := sp.Capabilities; c != nil {
		caps = map[string]any{"network": c.Network, "timeout": c.Timeout, "memory_mib": c.MemoryMiB}
	}
	p := &models.FunctionPackage{ID: uuid.NewString(), Name: sp.Name, Description: sp.Description, Runtime: sp.Runtime,
		Capabilities: models.NewJSON(caps), CreatedBy: actor.ID, CreatedAt: s.now()}
	if _, err := s.pkg(ctx, sp.Name); err == nil {
		return nil, apperr.New(apperr.Conflict, "function package %q exists", sp.Name)
	}
	if err := s.db.WithContext(ctx).Create(p).Error; err != nil {
		return nil, fmt.Errorf("create function package %s: %w", sp.Name, err)
	}
	return p, nil
}

// canonical reports whether v is a full semantic version (1.2.3, 1.2.3-beta.1).
func canonical(v string) bool {
	return semver.IsValid("v"+v) && semver.Canonical("v"+v) == "v"+v && semver.Build("v"+v) == ""
}

// Publish compiles and stores a version; published versions never
// change, so publishing one that exists is 409.
func (s *Service) Publish(ctx context.Context, actor *models.User, name string, sp VersionSpec) (*models.FunctionVersion, error) {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return nil, err
	}
	if !canonical(sp.Version) {
		return nil, invalid("version", "format", "version %q must be a semantic version such as 1.2.3 or 1.3.0-beta.1", sp.Version)
	}
	prog, err := runtime.Compile(p.Runtime, sp.Source)
	if err != nil {
		return nil, compileError("source", err)
	}
	row := &models.FunctionVersion{ID: uuid.NewString(), PackageID: p.ID, Version: sp.Version, Source: sp.Source, Code: prog.Code,
		CreatedBy: actor.ID, CreatedAt: s.now()}
	if _, err := s.version(ctx, p, sp.Version); err == nil {
		return nil, apperr.New(apperr.Conflict, "%s@%s is published; published versions are immutable, publish a new version", name, sp.Version)
	}
	if err := s.db.WithContext(ctx).Create(row).Error; err != nil {
		return nil, fmt.Errorf("publish %s@%s: %w", name, sp.Version, err)
	}
	return row, nil
}

// versions lists p's versions, highest first.
func (s *Service) versions(ctx context.Context, p *models.FunctionPackage) ([]string, error) {
	var vs []string
	if err := s.db.WithContext(ctx).Model(&models.FunctionVersion{}).Where("package_id = ?", p.ID).Pluck("version", &vs).Error; err != nil {
		return nil, fmt.Errorf("list versions of %s: %w", p.Name, err)
	}
	slices.SortFunc(vs, func(a, b string) int { return semver.Compare("v"+b, "v"+a) })
	return vs, nil
}

// checkAutoUpgradeFloor: auto-upgrade starts from a released version
// (OpenFoundry's rule: ≥ 1.0.0, no pre-release).
func checkAutoUpgradeFloor(v string) error {
	if !canonical(v) || semver.Prerelease("v"+v) != "" || semver.Major("v"+v) == "v0" {
		return apperr.New(apperr.InvalidArgument, "auto_upgrade needs a released version ≥ 1.0.0 without pre-release, got %q", v)
	}
	return nil
}

// upgrade is the auto-upgrade rule: the highest published version with
// the same major, no pre-release, ≥ pinned.
func (s *Service) upgrade(ctx context.Context, p *models.FunctionPackage, pinned string) (string, error) {
	vs, err := s.versions(ctx, p)
	if err != nil {
		return "", err
	}
	return pickUpgrade(vs, pinned), nil
}

// pickUpgrade applies the rule to vs (pinned itself when none is newer).
func pickUpgrade(vs []string, pinned string) string {
	best := pinned
	for _, v := range vs {
		sv := "v" + v
		if semver.Major(sv) == semver.Major("v"+pinned) && semver.Prerelease(sv) == "" && semver.Compare(sv, "v"+best) > 0 {
			best = v
		}
	}
	return best
}

// ListPackages lists packages by name.
func (s *Service) ListPackages(ctx context.Context, offset, limit int) ([]models.FunctionPackage, error) {
	out := []models.FunctionPackage{}
	if err := s.db.WithContext(ctx).Order("name").Offset(offset).Limit(limit).Find(&out).Error; err != nil {
		return nil, fmt.Errorf("list function packages: %w", err)
	}
	return out, nil
}

// GetPackage is a package with its versions.
func (s *Service) GetPackage(ctx context.Context, name string) (*PackageView, error) {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return nil, err
	}
	vs, err := s.versions(ctx, p)
	if err != nil {
		return nil, err
	}
	return &PackageView{FunctionPackage: *p, Versions: vs}, nil
}

// GetVersion is one version with its source.
func (s *Service) GetVersion(ctx context.Context, name, v string) (*models.FunctionVersion, error) {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return nil, err
	}
	return s.version(ctx, p, v)
}

// DeleteVersion deletes a version no action type pins exactly.
func (s *Service) DeleteVersion(ctx context.Context, name, v string) error {
	p, err := s.pkg(ctx, name)
	if err != nil {
		return err
	}
	row, err := s.version(ctx, p, v)
	if err != nil {
		return err
	}
	pins, err := s.pinnedBy(ctx, name, v)
	if err != nil {
		return err
	}
	if len(pins) > 0 {
		return apperr.New(apperr.DependentsExist, "%s@%s is pinned by action type(s) %v", name, v, pins).WithData(map[string]any{"action_types": pins})
	}
	if err := s.db.WithContext(ctx).Delete(row).Error; err != nil {
		return fmt.Errorf("delete %s@%s: %w", name, v, err)
	}
	return nil
}

// pinnedBy names the action types whose invoke_function config pins
// name@v exactly (without auto_upgrade), or cannot be read.
func (s *Service) pinnedBy(ctx context.Context, name, v string) ([]string, error) {
	var ats []models.ActionType
	if err := s.db.WithContext(ctx).Where("operation_kind = ?", domain.KindInvokeFunction).Find(&ats).Error; err != nil {
		return nil, fmt.Errorf("list invoke_function action types: %w", err)
	}
	var out []string
	for _, at := range ats {
		var ref struct {
			Package     string `json:"package"`
			PackageName string `json:"package_name"`
			Version     string `json:"version"`
			AutoUpgrade bool   `json:"auto_upgrade"`
		}
		// A config this cannot read might pin the version: refuse the
		// delete (naming the action type, to fix or delete) rather than
		// break an action type nobody can see is affected.
		if err := json.Unmarshal(at.Config.V.Operation, &ref); err != nil {
			out = append(out, at.Name)
			continue
		}
		if (ref.Package == name || ref.PackageName == name) && ref.Version == v && !ref.AutoUpgrade {
			out = append(out, at.Name)
		}
	}
	return out, nil
}

// compareVersions orders semantic versions.
func compareVersions(a, b string) int { return semver.Compare("v"+a, "v"+b) }
