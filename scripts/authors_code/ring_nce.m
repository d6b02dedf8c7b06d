function ring_nce(checkout, out_json, S, Ns, kappa, alg)
% RING_NCE  Run the authors' NCE on their ring model, as their experiment code does, and
% record for every fit whether it moved from its starting value.
%
%   octave-cli --no-gui scripts/authors_code/ring_nce.m  (see scripts/authors_code/README.md)
%   ring_nce(CHECKOUT, OUT_JSON, S, NS, KAPPA, ALG)
%
% CHECKOUT: a checkout of https://github.com/ciwanceylan/CNCE-matlab (nothing of it is copied
% here). For each of S parameter sets (their generate_parameters('ring', S, 5), seeded as
% their config_consistency.m seeds: rng(523)) and each N in NS, the data come from their
% getData(N, 5, 'ring_NCE', S, k, seed) (their generator genRingData), the noise from their
% gNCEnoise with KAPPA noise points per data point, and the fit from their optimise_main with
% ALG ('fminunc', as their config_consistency.m sets, or 'minimize') and 6000 iterations, the
% loss their nce_loss. Recorded per fit: the loss at the start and at the end, the parameters,
% whether they moved, the squared error of (mu, precision) at the start and at the end (their
% calculateError), and the share of data and noise terms in the saturated branches of
% nce_loss (G < -30 for data, G > 30 for noise) at the start.
  bin = fullfile(checkout, 'matlab', 'synthetic_data', 'bin');
  if ~exist(fullfile(bin, 'estimation', 'nce_loss.m'), 'file')
    error('ring_nce: checkout must be a checkout of CNCE-matlab; %s has no matlab/synthetic_data/bin', checkout);
  end
  addpath(genpath(bin));
  addpath(fullfile(fileparts(mfilename('fullpath')), 'shims'));
  global CNCE_DATA_FOLDER
  CNCE_DATA_FOLDER = tempname();
  mkdir(CNCE_DATA_FOLDER);
  D = 5;
  rng(523);
  generate_parameters('ring', S, D);
  % Octave's save() does not add the '.mat' that MATLAB adds and their getData looks for;
  % without this rename getData would draw new parameters at every call
  f = fullfile(CNCE_DATA_FOLDER, 'gt_parameters', sprintf('ring_parameters_%dD', D));
  if exist(f, 'file') && ~exist([f '.mat'], 'file')
    movefile(f, [f '.mat']);
  end
  opt.alg = alg;
  opt.maxIter = 6000;
  opt.verbose = 0;
  rows = {};
  for k = 1:S
    for N = Ns
      [X, th_gt, th_init] = getData(N, D, 'ring_NCE', S, k, 1000 + k);
      rng(2000 + k);
      [U, logPU] = gNCEnoise(X, kappa);
      obj = @(theta) nce_loss(@ringModelNCE, theta, U, logPU, kappa);
      loss0 = obj(th_init);
      logPhi = ringModelNCE(U, th_init);
      G = logPhi - logPU;
      sat_x = mean(G(1:N) < -30);
      sat_y = mean(G(N + 1:end) > 30);
      t0 = tic;
      [th, aux] = optimise_main(obj, th_init, opt);
      secs = toc(t0);
      row = struct('sim', k, 'N', N, 'kappa', kappa, 'alg', alg, 'loss_start', loss0, 'loss_end', obj(th), ...
                   'theta_true', th_gt, 'theta_start', th_init, 'theta_end', th, ...
                   'moved', norm(th - th_init) > 1e-8 * max(1, norm(th_init)), ...
                   'error_start', calculateError(th_gt(1:end - 1), th_init(1:end - 1), 'ring'), ...
                   'error_end', calculateError(th_gt(1:end - 1), th(1:end - 1), 'ring'), ...
                   'saturated_data_share', sat_x, 'saturated_noise_share', sat_y, 'seconds', secs);
      rows{end + 1} = row;
      printf('sim %d N %d: moved %d, loss %.4g -> %.4g\n', k, N, row.moved, loss0, row.loss_end);
    end
  end
  out = struct('driver', 'scripts/authors_code/ring_nce.m', 'octave', version(), 'S', S, 'Ns', Ns, ...
               'kappa', kappa, 'alg', alg, 'fits', {rows});
  tmp = [out_json '.part'];
  fid = fopen(tmp, 'w');
  fputs(fid, jsonencode(out));
  fclose(fid);
  rename(tmp, out_json);
end
