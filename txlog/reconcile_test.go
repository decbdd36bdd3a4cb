package txlog

import "testing"

// TestReconcilerApply checks each action kind's effect on the state outside
// the file set (spec "Action Reconciliation").
func TestReconcilerApply(t *testing.T) {
	p1, p2 := &Protocol{MinReaderVersion: 1, MinWriterVersion: 2}, &Protocol{MinReaderVersion: 3, MinWriterVersion: 7}
	m1, m2 := &Metadata{ID: "a"}, &Metadata{ID: "b"}
	var protocol *Protocol
	var metadata *Metadata
	txns := map[string]*Txn{}
	domains := map[string]*DomainMetadata{}
	r := Reconciler{Protocol: &protocol, Metadata: &metadata, Txns: txns, Domains: domains}
	actions := []Action{
		{Protocol: p1}, {Metadata: m1}, {Protocol: p2}, {Metadata: m2},
		{Txn: &Txn{AppID: "q", Version: 1}}, {Txn: &Txn{AppID: "q", Version: 2}}, {Txn: &Txn{AppID: "r", Version: 5}},
		{DomainMetadata: &DomainMetadata{Domain: "d1", Configuration: "x"}},
		{DomainMetadata: &DomainMetadata{Domain: "d2", Configuration: "y"}},
		{DomainMetadata: &DomainMetadata{Domain: "d1", Removed: true}},
		{Add: &Add{Path: "f"}}, {Remove: &Remove{Path: "f"}}, {CommitInfo: &CommitInfo{Operation: "WRITE"}},
	}
	for i := range actions {
		r.Apply(&actions[i])
	}
	if protocol != p2 || metadata != m2 {
		t.Errorf("protocol %+v metadata %+v, want the last ones", protocol, metadata)
	}
	if len(txns) != 2 || txns["q"].Version != 2 || txns["r"].Version != 5 {
		t.Errorf("txns %v, want q at 2 and r at 5", txns)
	}
	if len(domains) != 1 || domains["d2"] == nil || domains["d2"].Configuration != "y" {
		t.Errorf("domains %v, want d2 only", domains)
	}
}
