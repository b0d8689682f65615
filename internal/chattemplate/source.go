package chattemplate

// HelperSource returns the helper's Python source (chattemplate.py), for a process that imports its
// tokenizer and template rendering as a module (the lab's policy server does).
func HelperSource() []byte { return append([]byte(nil), helperSource...) }
