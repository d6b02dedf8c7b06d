function opts = optimoptions(solver, varargin)
% OPTIMOPTIONS  MATLAB's option object for fminunc, mapped onto Octave's optimset (this
% project's shim). Names Octave's fminunc does not know are dropped ('Algorithm': Octave's
% fminunc is a trust-region quasi-Newton method, not MATLAB's line-search quasi-Newton).
  map = struct('Display', 'Display', 'GradObj', 'GradObj', 'SpecifyObjectiveGradient', 'GradObj', ...
               'MaxIter', 'MaxIter', 'MaxIterations', 'MaxIter');
  args = {};
  for k = 1:2:numel(varargin)
    name = varargin{k};
    value = varargin{k + 1};
    if isfield(map, name)
      if islogical(value)
        value = ifelse_onoff(value);
      end
      args(end + 1:end + 2) = {map.(name), value};
    end
  end
  opts = optimset(args{:});
end

function s = ifelse_onoff(v)
  if v
    s = 'on';
  else
    s = 'off';
  end
end
