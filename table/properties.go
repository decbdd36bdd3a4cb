package table

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakit/deltakit/schema"
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
// Setting delta.columnMapping.mode=name on a table without column mapping
// enables it as Spark does (spec "Column Mapping"): the protocol is
// upgraded (reader 2 / writer 5, or the columnMapping feature on a table
// with table features), every column, nested fields too, gets a fresh
// delta.columnMapping.id and its current name as
// delta.columnMapping.physicalName (the existing data files, stats and
// partition values use the names, so nothing is rewritten), and
// delta.columnMapping.maxColumnId is set, all in this one commit;
// RenameColumn and DropColumn work afterwards. Any other change of the mode
// (none to id, name or id to none, name to id) is a
// *ColumnMappingModeChangeError (ErrColumnMappingModeChange and
// ErrInvalidArgument), naming the version and the reason. Setting the
// properties deltakit maintains itself (the ICT enablement properties, the
// row tracking materialized column names, delta.columnMapping.maxColumnId)
// is ErrInvalidArgument. On any error nothing is committed.
func (t *Table) SetProperties(ctx context.Context, props map[string]string) (*Table, error) {
	if t == nil {
		return nil, nilTableError("set properties")
	}
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
	var sch *schema.StructType
	if mappingMode(t.snap.Metadata()) == "none" && strings.EqualFold(conf[txlog.PropColumnMappingMode], "name") {
		var err error
		if sch, conf, err = upgradeColumnMapping(t.Schema(), conf); err != nil {
			return fail(err)
		}
	}
	return t.alterProperties(ctx, SetPropertiesOperation, "set properties", sch, conf,
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
func (t *Table) UnsetProperties(ctx context.Context, ifExists bool, keys ...string) (*Table, error) {
	if t == nil {
		return nil, nilTableError("unset properties")
	}
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
	return t.alterProperties(ctx, UnsetPropertiesOperation, "unset properties", nil, conf,
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
// the current value) or unsetting a property deltakit maintains, and
// unsetting delta.columnMapping.mode. (Setting the mode is checked by the
// commit path, checkMappingModeChange: only none to name is taken.)
func checkMaintainedProperty(k, old, v string, set bool) error {
	if slices.Contains(maintainedProperties, k) && (!set || v != old) {
		return fmt.Errorf("%w: table property %s is maintained by the writer", ErrInvalidArgument, k)
	}
	if k == txlog.PropColumnMappingMode && !set {
		return fmt.Errorf("%w: table property %s cannot be unset (it is %q)", ErrInvalidArgument, k, old)
	}
	return nil
}

// alterProperties commits conf as the table's new configuration through
// the one operation path, with the protocol the new properties need, and
// sch as its new schema when not nil (enabling column mapping).
func (t *Table) alterProperties(ctx context.Context, name, verb string, sch *schema.StructType, conf, params map[string]string) (*Table, error) {
	fail := func(err error) (*Table, error) {
		return nil, fmt.Errorf("table: %s %s: %w", verb, t.URI(), err)
	}
	m := t.snap.Metadata().Clone()
	if sch == nil {
		sch = t.Schema()
	} else {
		s, err := schema.Marshal(sch)
		if err != nil {
			return fail(err)
		}
		m.SchemaString = s
	}
	cur := t.snap.Protocol()
	p, err := protocolForChange(cur, sch, conf)
	if err != nil {
		return fail(err)
	}
	m.Configuration = conf
	if _, err := tableConstraints(m, sch); err != nil {
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
