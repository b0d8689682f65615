package config

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/spadekit/spade/schemas"
)

// The enum-valued keys. Values stored in tables (setting, regret.variant, ended_by) are typed enums of
// schemas; the ones that only configure a run are typed here. Every field of an enum type is checked by
// Validate, whatever its key, so a new enum key needs no new check.

// Trainer is grpo.trainer: which trainer consumes the GRPO batches.
type Trainer string

// The trainers.
const (
	// TrainerNone assembles and commits the batches only (an external trainer, or none).
	TrainerNone Trainer = "none"
	// TrainerTorch runs the PyTorch trainer of stages/grpo/trainer after each step.
	TrainerTorch Trainer = "torch"
)

// TrainerValues lists every trainer.
func TrainerValues() []Trainer { return []Trainer{TrainerNone, TrainerTorch} }

// Publish is grpo.publish: how new weights reach the generation server.
type Publish string

// The ways to publish weights.
const (
	// PublishLoRA loads each new adapter through vLLM's /v1/load_lora_adapter.
	PublishLoRA Publish = "lora"
	// PublishCommand runs grpo.publish_command.
	PublishCommand Publish = "command"
	// PublishNone publishes nothing (the calls keep the weights they had).
	PublishNone Publish = "none"
	// PublishSGLang loads each full checkpoint into every SGLang server of grpo.publish_urls through
	// POST /update_weights_from_disk {"model_path"}.
	PublishSGLang Publish = "sglang"
	// PublishVLLMReload loads each full checkpoint into every vLLM server of grpo.publish_urls in place
	// (the dev-mode /collective_rpc: update_config to the new path, then reload_weights; the server runs
	// with VLLM_SERVER_DEV_MODE=1).
	PublishVLLMReload Publish = "vllm_reload"
)

// PublishValues lists every way to publish.
func PublishValues() []Publish {
	return []Publish{PublishLoRA, PublishCommand, PublishNone, PublishSGLang, PublishVLLMReload}
}

// Agg is grpo.agg: how the trainer averages token losses.
type Agg string

// The loss aggregations.
const (
	// AggTokenMean averages over every token of the batch.
	AggTokenMean Agg = "token-mean"
	// AggSeqMeanTokenMean averages each sequence's tokens, then the sequences.
	AggSeqMeanTokenMean Agg = "seq-mean-token-mean"
)

// AggValues lists every aggregation.
func AggValues() []Agg { return []Agg{AggTokenMean, AggSeqMeanTokenMean} }

// OutcomeValue is outcome.value: what an episode's outcome o is (see Outcome).
type OutcomeValue string

// The outcome values.
const (
	// OutcomeReturn is the episode's return, the sum of the env's rewards (episodes.return).
	OutcomeReturn OutcomeValue = "return"
	// OutcomeSuccess is 1 for a solved episode (episodes.success), else 0.
	OutcomeSuccess OutcomeValue = "success"
)

// OutcomeValueValues lists every outcome value.
func OutcomeValueValues() []OutcomeValue { return []OutcomeValue{OutcomeReturn, OutcomeSuccess} }

// enumTypes maps each enum type of a config field to its valid values, as text.
var enumTypes = map[reflect.Type][]string{
	reflect.TypeFor[schemas.Setting](): names(schemas.SettingValues()),
	reflect.TypeFor[schemas.Variant](): names(schemas.VariantValues()),
	reflect.TypeFor[Trainer]():         names(TrainerValues()),
	reflect.TypeFor[Publish]():         names(PublishValues()),
	reflect.TypeFor[Agg]():             names(AggValues()),
	reflect.TypeFor[OutcomeValue]():    names(OutcomeValueValues()),
	reflect.TypeFor[HintedAt]():        names(HintedAtValues()),
	reflect.TypeFor[ReturnKind]():      names(ReturnKindValues()),
	reflect.TypeFor[HintPlacement]():   names(HintPlacementValues()),
	reflect.TypeFor[ActionFormat]():    names(ActionFormatValues()),
	reflect.TypeFor[ContextPolicy]():   names(ContextPolicyValues()),
	reflect.TypeFor[TokenIO]():         names(TokenIOValues()),
	reflect.TypeFor[HintMode]():        names(HintModeValues()),
	reflect.TypeFor[Regen]():           names(RegenValues()),
	reflect.TypeFor[GateChecks]():      names(GateChecksValues()),
	reflect.TypeFor[DocDraw]():         names(DocDrawValues()),
	reflect.TypeFor[SkillOrder]():      names(SkillOrderValues()),
	reflect.TypeFor[RegretDelta]():     names(RegretDeltaValues()),
	reflect.TypeFor[EMAUpdate]():       names(EMAUpdateValues()),
	reflect.TypeFor[TIS]():             names(TISValues()),
	reflect.TypeFor[SampleUnit]():      names(SampleUnitValues()),
	reflect.TypeFor[AdvStd]():          names(AdvStdValues()),
	reflect.TypeFor[FailedPlay]():      names(FailedPlayValues()),
}

func names[T ~string](values []T) []string {
	out := make([]string, len(values))
	for i, v := range values {
		out[i] = string(v)
	}
	return out
}

// EnumValues returns the valid values of an enum-valued key, or nil for a key that takes any value of its
// type (outcome.exclude_ended_by, a list, is described by its doc comment).
func EnumValues(key string) []string {
	f, ok := (&Config{}).field(key)
	if !ok {
		return nil
	}
	return slices.Clone(enumTypes[f.Type()])
}

// validateEnums checks every enum-valued key; the error names the first invalid key and its valid values.
func (c *Config) validateEnums() error {
	var err error
	walk(reflect.ValueOf(c).Elem(), "", func(key string, v reflect.Value) {
		values, ok := enumTypes[v.Type()]
		if err != nil || !ok || slices.Contains(values, v.String()) {
			return
		}
		err = fmt.Errorf("config: key %q must be one of %s; got %q", key, strings.Join(values, ", "), v.String())
	})
	return err
}

// DefaultExcludeEndedBy is outcome.exclude_ended_by's default: the episodes in which the env, not the
// Agent, failed.
const DefaultExcludeEndedBy = string(schemas.EndedEnvError) + "," + string(schemas.EndedTimeout)
