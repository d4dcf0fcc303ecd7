package pluginmgr

// Chain configs are checked against the JSON Schema each plugin declares,
// when a chain is saved or tried, so that a config the plugin cannot use is
// refused with a clear error instead of failing deliveries later.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/govgate/govgate/core"
	"github.com/govgate/govgate/core/internal/wasmhost"
)

// checkConfigs checks each entry's config against the JSON Schema that its
// plugin declares, so that a config the plugin cannot use is refused when it
// is saved instead of failing deliveries later. Entries naming a plugin not
// in plugins are left to the caller.
func (m *Manager) checkConfigs(ctx context.Context, entries []core.ChainEntry, plugins map[string]core.StoredPlugin) error {
	for i, e := range entries {
		p, ok := plugins[e.Plugin]
		if !ok {
			continue
		}
		s, err := m.pluginSchema(ctx, p)
		if err == nil && s != nil {
			err = validateConfig(s, e.Config)
		}
		if err != nil {
			return inEntry(i, e.Plugin, err)
		}
	}
	return nil
}

// inEntry says which chain entry err is about, keeping its code.
func inEntry(i int, plugin string, err error) error {
	var ce *core.Error
	if errors.As(err, &ce) {
		return &core.Error{Code: ce.Code, Message: fmt.Sprintf("chain entry %d (%s): %s", i, plugin, ce.Message), Err: err}
	}
	return fmt.Errorf("chain entry %d (%s): %w", i, plugin, err)
}

// configSchema is the outcome of compiling one module's config schema: a nil
// schema accepts any config; err is kept so that a schema that does not
// compile is not compiled again at every chain change.
type configSchema struct {
	schema *jsonschema.Schema
	err    error
}

// pluginSchema returns the compiled config schema of the stored plugin p,
// nil when it declares none.
func (m *Manager) pluginSchema(ctx context.Context, p core.StoredPlugin) (*jsonschema.Schema, error) {
	m.schemaMu.Lock()
	c, ok := m.schemas[p.SHA256]
	m.schemaMu.Unlock()
	if ok {
		return c.schema, c.err
	}
	raw, err := m.declaredSchema(ctx, p)
	if err != nil {
		return nil, err
	}
	return m.schemaFor(p.SHA256, raw)
}

// declaredSchema reads the config schema that p's module declares: from the
// host when that very module is loaded here, otherwise from the stored
// module, as for a disabled plugin or one uploaded through another process
// since this one last synced.
func (m *Manager) declaredSchema(ctx context.Context, p core.StoredPlugin) (json.RawMessage, error) {
	if info, ok := m.host.Plugin(p.Name); ok && info.SHA256 == p.SHA256 {
		return info.ConfigSchema, nil
	}
	stored, err := m.st.Plugins(ctx, true)
	if err != nil {
		return nil, fmt.Errorf("read plugin %s: %w", p.Name, err)
	}
	i := slices.IndexFunc(stored, func(s core.StoredPlugin) bool { return s.Name == p.Name && s.SHA256 == p.SHA256 })
	if i < 0 {
		return nil, core.Errorf(core.ECodeConflict, "the plugin was replaced or removed meanwhile; try again")
	}
	info, _, err := m.host.Check(ctx, stored[i].Wasm)
	if errors.Is(err, wasmhost.ErrInvalidPlugin) {
		return nil, &core.Error{Code: core.ECodeInvalidRequest, Message: "the plugin's module does not load, so its config cannot be checked", Err: err}
	}
	if err != nil {
		return nil, fmt.Errorf("read the metadata of plugin %s: %w", p.Name, err)
	}
	return info.ConfigSchema, nil
}

// schemaFor compiles raw, the config schema of the module whose digest is
// sha, once: keyed by digest, a replaced plugin gets its new schema.
func (m *Manager) schemaFor(sha string, raw json.RawMessage) (*jsonschema.Schema, error) {
	m.schemaMu.Lock()
	defer m.schemaMu.Unlock()
	if c, ok := m.schemas[sha]; ok {
		return c.schema, c.err
	}
	s, err := compileSchema(raw)
	m.schemas[sha] = configSchema{schema: s, err: err}
	return s, err
}

// pruneSchemas forgets the schemas of modules no longer stored.
func (m *Manager) pruneSchemas(stored []core.StoredPlugin) {
	keep := make(map[string]bool, len(stored))
	for _, p := range stored {
		keep[p.SHA256] = true
	}
	m.schemaMu.Lock()
	defer m.schemaMu.Unlock()
	for sha := range m.schemas {
		if !keep[sha] {
			delete(m.schemas, sha)
		}
	}
}

// schemaURL names a plugin's config schema inside its own compiler. It is
// hierarchical so that a relative $ref resolves to another document, which
// is then refused, rather than quietly back to the schema itself as under a
// urn: name; .invalid is a name no network can answer for.
const schemaURL = "https://govgate.invalid/config-schema.json"

// compileSchema compiles a plugin's config schema; an absent one compiles
// to nil, which accepts any config.
func compileSchema(raw json.RawMessage) (*jsonschema.Schema, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	s, err := compileUntrusted(raw)
	if err != nil {
		return nil, &core.Error{Code: core.ECodeInvalidRequest, Message: "its configSchema is not a valid JSON Schema: " + schemaProblem(err), Err: err}
	}
	return s, nil
}

// compileUntrusted compiles a schema that comes from a plugin, so it may
// refer to nothing outside itself: the library's default loader would read
// any file:// URL the schema names.
func compileUntrusted(raw json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.UseLoader(jsonschema.SchemeURLLoader{}) // no scheme is registered: every URL is refused
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, fmt.Errorf("add schema: %w", err)
	}
	return c.Compile(schemaURL)
}

// schemaProblem tells in one line what is wrong with a schema: the library's
// own message spans lines and names the metaschema, not the fault.
func schemaProblem(err error) string {
	var invalid *jsonschema.SchemaValidationError
	var load *jsonschema.LoadURLError
	var verr *jsonschema.ValidationError
	switch {
	case errors.As(err, &invalid) && errors.As(invalid.Err, &verr):
		return firstProblem(verr, "")
	case errors.As(err, &load):
		return fmt.Sprintf("it refers to %s, but a config schema must be self-contained", load.URL)
	}
	return err.Error()
}

// validateConfig checks a chain entry's config against s. An absent or null
// config reaches the plugin as its zero config, so it is checked as {}.
func validateConfig(s *jsonschema.Schema, config json.RawMessage) error {
	if t := bytes.TrimSpace(config); len(t) == 0 || bytes.Equal(t, []byte("null")) {
		config = json.RawMessage(`{}`)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(config))
	if err != nil {
		return &core.Error{Code: core.ECodeInvalidRequest, Message: "config is not JSON", Err: err}
	}
	err = s.Validate(doc)
	var verr *jsonschema.ValidationError
	if errors.As(err, &verr) {
		return &core.Error{Code: core.ECodeInvalidRequest, Message: firstProblem(verr, "config"), Err: err}
	}
	return err
}

// firstProblem describes the first leaf of a validation error with where it
// is, e.g. "config at /daos: got string, want array": the leaf names the
// fault, where the error's root says only that validation failed.
func firstProblem(verr *jsonschema.ValidationError, what string) string {
	u := verr.DetailedOutput()
	for len(u.Errors) > 0 {
		u = &u.Errors[0]
	}
	msg := "invalid"
	if u.Error != nil {
		msg = u.Error.String()
	}
	where := what
	if u.InstanceLocation != "" {
		where = strings.TrimSpace(what + " at " + u.InstanceLocation)
	}
	if where == "" {
		return msg
	}
	return where + ": " + msg
}
