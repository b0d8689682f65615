// Package llm is the toolkit's one way of talking to a model: an OpenAI-compatible Chat Completions client
// (vLLM, SGLang, Triton's OpenAI front end, llama.cpp, Ollama) with per-role settings (designer, agent,
// screen), bounded concurrency, per-request timeouts and retries with exponential backoff and full jitter,
// and a recorder that turns every call into an `llm_calls` row (docs/architecture.md, "Tables", "Contracts").
//
// Every request asks for per-token logprobs and token ids (`logprobs: true`, `top_logprobs: 0`, vLLM's
// `return_token_ids`), so GRPO trains on exactly the sampled tokens; a server that returns neither still
// works and the row's token columns stay null.
//
// A role whose base URL is `replay:<run>` is answered from that run's recorded `llm_calls`, looked up by
// the SHA-256 of the request body. Every request carries a `seed` derived from the run seed and the call's
// key, so two calls never share a body and a stored run re-executes offline, bit for bit. A miss is an
// error naming the role, step and a prefix of the request.
//
// Failures of one call (HTTP errors after retries, timeouts, oversized or invalid UTF-8 responses) are not
// Go errors: they come back as a Completion whose Err is set and are recorded with their reason, so a
// stage goes on. Chat returns a Go error only when the stage must stop: the context ended or a replay miss.
package llm
