package quorum

// SetTestingSkipSync makes the WAL ignore Ready.MustSync until reset.
func SetTestingSkipSync(skip bool) { testingSkipSync = skip }

// SetTestingSkipVoteSync makes the WAL ignore Ready.MustSync for HardState
// changes that come without entries (votes, new terms) until reset.
func SetTestingSkipVoteSync(skip bool) { testingSkipVoteSync = skip }
