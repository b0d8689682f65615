package bench

// PassAtK returns the unbiased estimate of pass@k from n samples of which c are correct:
// 1 − C(n−c, k) / C(n, k) (Chen et al. 2021, "Evaluating Large Language Models Trained on Code"),
// computed as 1 − Π_{i=n−c+1}^{n} (1 − k/i) for stability. It is 1 when n − c < k (every draw of k holds
// a correct sample) and needs 0 ≤ c ≤ n, 1 ≤ k ≤ n; sql/eval_scores.sql computes the same.
func PassAtK(n, c, k int) float64 {
	if n-c < k {
		return 1
	}
	p := 1.0
	for i := n - c + 1; i <= n; i++ {
		p *= 1 - float64(k)/float64(i)
	}
	return 1 - p
}
