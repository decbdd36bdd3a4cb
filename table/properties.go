package table

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/txlog"
)

// Operation names of the table property operations (Spark's
// commitInfo.operation of ALTER TABLE SET / UNSET TBLPROPERTIES).
const (
	SetPropertiesOperation   = "SET TBLPROPERTIES"
	UnsetPropertiesOperation = "UNSET TBLPROPERTIES"
)

// SetProperties sets table properties (metaData.configuration entries) of
// an existing table, as Spark's ALTER TABLE SET TBLPROPERTIES: a
// metadata-only commit (operation "SET TBLPROPERTIES", parameter
// properties: a JSON object of the properties set).
//
// Values are checked as Create checks them (ErrInvalidArgument for a
// delta.* boolean, number, interval or policy that does not parse, and
// for a CHECK constraint that cannot be evaluated). A property that turns
// on a table feature (the writer feature table, txlog.WriterFeatures:
// delta.enableDeletionVectors, delta.enableChangeDataFeed,
// delta.enableInCommitTimestamps, delta.enableRowTracking,
// delta.feature.<name>=supported, ...) upgrades the protocol in the same
// commit (txlog.ProtocolFor; a protocol never loses a feature); a feature
// deltakit cannot write is refused by name (*txlog.UnsupportedFeatureError,
// txlog.ErrUnsupportedFeature). Turning row tracking on for a table whose
// files have no row ids is refused (*txlog.UnsupportedFeatureError for
// rowTracking: a backfill is needed). Turning in-commit timestamps on
// records delta.inCommitTimestampEnablementVersion and
// delta.inCommitTimestampEnablementTimestamp (spec "In-Commit Timestamps").
// Changing delta.columnMapping.mode, and setting the properties deltakit
// maintains itself (the ICT enablement properties, the row tracking
// materialized column names, delta.columnMapping.maxColumnId), are
// ErrInvalidArgument. On any error nothing is committed.
func SetProperties(ctx context.Context, t *Table, props map[string]string) (*Table, error) {
	fail := func(err error) (*Table, error) {
		return nil, fmt.Errorf("table: set properties %s: %w", t.URI(), err)
	}
	if len(props) == 0 {
		return fail(fmt.Errorf("%w: no property to set", ErrInvalidArgument))
	}
	cur := t.snap.Metadata().Configuration
	for k, v := range props {
		if k == "" {
			return fail(fmt.Errorf("%w: empty property name", ErrInvalidArgument))
		}
		if err := checkMaintainedProperty(k, cur[k], v, true); err != nil {
			return fail(err)
		}
	}
	conf := maps.Clone(cur)
	if conf == nil {
		conf = map[string]string{}
	}
	maps.Copy(conf, props)
	return t.alterProperties(ctx, SetPropertiesOperation, "set properties", conf,
		map[string]string{"properties": jsonString(props)})
}

// UnsetProperties removes table properties from an existing table, as
// Spark's ALTER TABLE UNSET TBLPROPERTIES [IF EXISTS]: a metadata-only
// commit (operation "UNSET TBLPROPERTIES", parameters properties: a JSON
// array of the keys, and ifExists). A key the table does not have is
// ErrInvalidArgument unless ifExists is set. Unsetting a property that
// turned a feature on leaves the feature in the protocol (protocols are
// never downgraded); the properties deltakit maintains itself
// (delta.columnMapping.*, the ICT enablement properties, the row tracking
// materialized column names) cannot be unset (ErrInvalidArgument). On any
// error nothing is committed.
func UnsetProperties(ctx context.Context, t *Table, ifExists bool, keys ...string) (*Table, error) {
	fail := func(err error) (*Table, error) {
		return nil, fmt.Errorf("table: unset properties %s: %w", t.URI(), err)
	}
	if len(keys) == 0 {
		return fail(fmt.Errorf("%w: no property to unset", ErrInvalidArgument))
	}
	cur := t.snap.Metadata().Configuration
	conf := maps.Clone(cur)
	if conf == nil {
		conf = map[string]string{}
	}
	for _, k := range keys {
		v, ok := cur[k]
		if !ok {
			if ifExists {
				continue
			}
			return fail(fmt.Errorf("%w: table has no property %q", ErrInvalidArgument, k))
		}
		if err := checkMaintainedProperty(k, v, "", false); err != nil {
			return fail(err)
		}
		delete(conf, k)
	}
	return t.alterProperties(ctx, UnsetPropertiesOperation, "unset properties", conf,
		map[string]string{"properties": jsonString(keys), "ifExists": strconv.FormatBool(ifExists)})
}

// maintainedProperties are the properties deltakit (txlog) sets itself:
// they are neither set nor unset by hand.
var maintainedProperties = []string{
	txlog.PropInCommitTimestampEnablementVersion, txlog.PropInCommitTimestampEnablementTimestamp,
	txlog.PropMaterializedRowIDColumn, txlog.PropMaterializedRowCommitVersionColumn,
	"delta.columnMapping.maxColumnId",
}

// checkMaintainedProperty refuses setting (set true, to value v; old is
// the current value) or unsetting a property deltakit maintains, and any
// change of delta.columnMapping.mode (an upgrade of an existing table needs
// ids and physical names for every column, which deltakit does not assign
// to an existing table).
func checkMaintainedProperty(k, old, v string, set bool) error {
	if slices.Contains(maintainedProperties, k) && (!set || v != old) {
		return fmt.Errorf("%w: table property %s is maintained by the writer", ErrInvalidArgument, k)
	}
	if k == txlog.PropColumnMappingMode && (!set || !strings.EqualFold(v, old) && !(old == "" && strings.EqualFold(v, "none"))) {
		return fmt.Errorf("%w: table property %s cannot be changed on an existing table (from %q to %q)",
			ErrInvalidArgument, k, old, v)
	}
	return nil
}

// alterProperties commits conf as the table's new configuration through
// the one operation path, with the protocol the new properties need.
func (t *Table) alterProperties(ctx context.Context, name, verb string, conf, params map[string]string) (*Table, error) {
	fail := func(err error) (*Table, error) {
		return nil, fmt.Errorf("table: %s %s: %w", verb, t.URI(), err)
	}
	cur := t.snap.Protocol()
	p, err := protocolForChange(cur, t.Schema(), conf)
	if err != nil {
		return fail(err)
	}
	m := t.snap.Metadata().Clone()
	m.Configuration = conf
	if _, err := tableConstraints(m, t.Schema()); err != nil {
		return fail(err)
	}
	op, err := t.beginAs(name, verb, false, writeConfig{})
	if err != nil {
		return nil, err
	}
	op.metadata = m
	if p != cur {
		op.protocol = p
	}
	op.params = params
	return t.commitTable(ctx, op)
}
