#pragma once
// The one TempDir of the test suite lives in support/temp_dir.h: two classes
// named rfa::test::TempDir in one binary break the one-definition rule.
#include "support/temp_dir.h"
