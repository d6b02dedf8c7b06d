function ica_mle(checkout, out_json, S, Ns)
% ICA_MLE  Run the authors' maximum likelihood for their ICA model (their ica_fast_mle: Octave's
% fminunc and their minimize, each given the natural gradient, the better of the two kept)
% and compare where it stops with the optimum of the same likelihood found from there with
% its true gradient.
%
%   ica_mle(CHECKOUT, OUT_JSON, S, NS)
%
% CHECKOUT: a checkout of https://github.com/ciwanceylan/CNCE-matlab (nothing of it is copied
% here). For each of S parameter sets (their generate_parameters('ICA', S, 4) after rng(523),
% as their config_consistency.m seeds) and each N in NS, the data come from their
% getData(N, 4, 'ICA', S, k, seed). Recorded per fit: the mean negative log-likelihood where
% their MLE stops and where this driver's refinement stops (Octave's fminunc on the same
% likelihood with its ordinary gradient, B^-T, started at their estimate), the norm of the
% true gradient at their estimate, and the squared error of both estimates (their
% calculateError, as their experiments score it).
  bin = fullfile(checkout, 'matlab', 'synthetic_data', 'bin');
  if ~exist(fullfile(bin, 'models', 'ICA', 'ica_fast_mle.m'), 'file')
    error('ica_mle: checkout must be a checkout of CNCE-matlab; %s has no matlab/synthetic_data/bin', checkout);
  end
  addpath(genpath(bin));
  addpath(fullfile(fileparts(mfilename('fullpath')), 'shims'));
  global CNCE_DATA_FOLDER
  CNCE_DATA_FOLDER = tempname();
  mkdir(CNCE_DATA_FOLDER);
  D = 4;
  rng(523);
  generate_parameters('ICA', S, D);
  f = fullfile(CNCE_DATA_FOLDER, 'gt_parameters', sprintf('ICA_parameters_%dD', D));
  if exist(f, 'file') && ~exist([f '.mat'], 'file')  % Octave's save() adds no '.mat'
    movefile(f, [f '.mat']);
  end
  tight = optimset('GradObj', 'on', 'TolFun', 1e-14, 'TolX', 1e-14, 'MaxIter', 5000, 'Display', 'off');
  rows = {};
  for k = 1:S
    for N = Ns
      [X, th_gt, th_init] = getData(N, D, 'ICA', S, k, 1000 + k);
      t0 = tic;
      [th, ~, aux] = ica_fast_mle(X, th_init);
      secs = toc(t0);
      nll = @(t) ica_nll(t, X, D);
      [f_theirs, g_theirs] = nll(th);
      [th_ref, f_ref] = fminunc(nll, th, tight);
      if ~(f_ref <= f_theirs)  % the refinement keeps their estimate where it finds nothing lower
        th_ref = th;
        f_ref = f_theirs;
      end
      [~, g_ref] = nll(th_ref);
      rows{end + 1} = struct('sim', k, 'N', N, 'their_optimiser', aux.optFun, 'nll_theirs', f_theirs, ...
                             'nll_refined', f_ref, 'gap', f_theirs - f_ref, 'grad_norm_theirs', norm(g_theirs), ...
                             'grad_norm_refined', norm(g_ref), ...
                             'error_theirs', calculateError(th_gt, th, 'ICA'), ...
                             'error_refined', calculateError(th_gt, th_ref, 'ICA'), 'seconds', secs);
      printf('sim %d N %d: %s, gap %.3g, grad %.3g -> %.3g\n', k, N, aux.optFun, f_theirs - f_ref, norm(g_theirs), norm(g_ref));
    end
  end
  out = struct('driver', 'scripts/authors_code/ica_mle.m', 'octave', version(), 'S', S, 'Ns', Ns, 'fits', {rows});
  tmp = [out_json '.part'];
  fid = fopen(tmp, 'w');
  fputs(fid, jsonencode(out));
  fclose(fid);
  rename(tmp, out_json);
end

function [f, g] = ica_nll(theta, X, D)
% The ICA model's mean negative log-likelihood (Laplace sources of unit variance) and its
% ordinary gradient: this project's code, the likelihood of their nestedMinFun.
  B = reshape(theta, D, D);
  S = X * B';
  N = size(X, 1);
  f = sqrt(2) * mean(sum(abs(S), 2)) + (D / 2) * log(2) - log(abs(det(B)));
  G = sqrt(2) * sign(S)' * X / N - inv(B)';
  g = reshape(G, size(theta));
end
