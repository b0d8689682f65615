package rollout

import (
	"github.com/spadekit/spade/internal/play"
)

// The Agent's templates, action parsing, context budget and return live in internal/play, which the eval
// stage's env_pool benchmarks share (stages may not import each other); rollout exports them under its
// own name too, for its callers and tests.

// PromptVersion, FirstUserTemplate and BytesPerToken are play's.
const (
	PromptVersion     = play.PromptVersion
	FirstUserTemplate = play.FirstUserTemplate
	BytesPerToken     = play.BytesPerToken
)

// PromptData and ToolAction are play's.
type (
	PromptData = play.PromptData
	ToolAction = play.ToolAction
)

// The functions are play's.
var (
	ParseGameAction     = play.ParseGameAction
	ParseBoxedAction    = play.ParseBoxedAction
	ParseAction         = play.ParseAction
	ParseToolAction     = play.ParseToolAction
	ParseToolTurn       = play.ParseToolTurn
	ToolsAnswerFeedback = play.ToolsAnswerFeedback
	ParseFeedback       = play.ParseFeedback
	EstimateTokens      = play.EstimateTokens
	HistoryTokens       = play.HistoryTokens
	CutHistory          = play.CutHistory
	PromptName          = play.PromptName
	ToolsFinalAnswer    = play.ToolsFinalAnswer
	LoadAgentTemplate   = play.LoadAgentTemplate
	FirstObservation    = play.FirstObservation
	Opening             = play.Opening
	SystemPrompt        = play.SystemPrompt
	EpisodeReturn       = play.EpisodeReturn
	ObservationKey      = play.ObservationKey
	TokenIOText         = play.TokenIOText
)
