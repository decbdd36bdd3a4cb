package streamsink

import "maps"

// WithOperationParameters adds entries to the commitInfo.operationParameters
// of every epoch commit, for a source that records what defines its epochs
// (the rows per epoch, the input, ...) next to them, so that a restart can
// check it resumes the same stream. outputMode, queryId and epochId are
// always the sink's own, as Spark writes them: entries with those keys are
// ignored. Repeated options merge, later keys winning.
func WithOperationParameters(params map[string]string) Option {
	return func(s *Sink) {
		if s.params == nil {
			s.params = make(map[string]string, len(params))
		}
		maps.Copy(s.params, params)
	}
}
