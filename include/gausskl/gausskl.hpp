// gausskl: KL divergences between Gaussian distributions.
#pragma once

#include "gausskl/errors.hpp"
#include "gausskl/gradients.hpp"
#include "gausskl/mixtures.hpp"
#include "gausskl/moments.hpp"
#include "gausskl/ops.hpp"
#include "gausskl/types.hpp"
#include "gausskl/version.hpp"
