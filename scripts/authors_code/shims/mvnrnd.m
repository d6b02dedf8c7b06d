function Y = mvnrnd(mu, Sigma, n)
% MVNRND  n draws from N(mu, Sigma) (this project's shim: Octave's core has no mvnrnd, and the
% authors' gNCEnoise.m calls it). mu: 1 x D, Sigma: D x D positive definite.
  D = numel(mu);
  Y = randn(n, D) * chol(Sigma) + repmat(reshape(mu, 1, D), n, 1);
end
