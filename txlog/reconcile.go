package txlog

// Reconciler points at the table state, other than the file set, that one
// log replay reconciles actions into (spec "Action Reconciliation"): the
// latest protocol and metadata, the latest txn per application id and the
// live domain metadata per domain. The snapshot's replay and
// maint.Verify's independent replay of the JSON commits both use it, so
// the rule is written once.
type Reconciler struct {
	Protocol **Protocol
	Metadata **Metadata
	Txns     map[string]*Txn
	Domains  map[string]*DomainMetadata
}

// Apply reconciles one action into r: a protocol or metadata action
// replaces the one before it, a txn replaces its application's, a
// domainMetadata action replaces its domain's or, when removed, deletes it.
// It leaves add and remove actions, whose file set is the caller's (an add
// replaces the file with its key, a remove takes it out), and the actions
// that take no part in replay (commitInfo, cdc, checkpointMetadata,
// sidecar).
func (r Reconciler) Apply(a *Action) {
	switch {
	case a.Metadata != nil:
		*r.Metadata = a.Metadata
	case a.Protocol != nil:
		*r.Protocol = a.Protocol
	case a.Txn != nil:
		r.Txns[a.Txn.AppID] = a.Txn
	case a.DomainMetadata != nil:
		if a.DomainMetadata.Removed {
			delete(r.Domains, a.DomainMetadata.Domain)
		} else {
			r.Domains[a.DomainMetadata.Domain] = a.DomainMetadata
		}
	}
}
