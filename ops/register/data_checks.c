/* The data checks of the catalogue's host kernels, as each key that runs
 * ops in host memory (CPU, Reference) calls them: one argument map per op,
 * from the op's values to what its opreg__check_<op>_data() reads. */
#include "ops/check/check.h"
#include "ops/ops_internal.h"
#include "ops/register/catalogue.h"

#define TS OPREG__ARG_T
#define IV OPREG__ARG_I

opreg_status opreg__data_check_rotary_embedding(const opreg_value *args) {
    return opreg__check_rotary_embedding_data(TS(0), TS(4));
}

opreg_status opreg__data_check_batched_rotary_embedding(const opreg_value *args) {
    return opreg__check_batched_rotary_embedding_data(TS(0), TS(4), TS(7));
}

opreg_status opreg__data_check_reshape_and_cache(const opreg_value *args) {
    return opreg__check_reshape_and_cache_data(TS(2), TS(4));
}

opreg_status opreg__data_check_reshape_and_cache_flash(const opreg_value *args) {
    return opreg__check_reshape_and_cache_flash_data(TS(2), TS(4));
}

opreg_status opreg__data_check_copy_blocks(const opreg_value *args) {
    return opreg__check_copy_blocks_data(OPREG__ARG_TL(0), OPREG__ARG_TL(1), OPREG__ARG_TL_LEN(0),
                                         TS(2));
}

/* swap_blocks reads both caches: dst must be in host memory too. */
opreg_status opreg__data_check_swap_blocks(const opreg_value *args) {
    OPREG__TRY(opreg__chk_cpu("_C::swap_blocks", "dst", TS(1)));
    return opreg__check_swap_blocks_data(TS(0), TS(1), TS(2));
}

opreg_status opreg__data_check_moe_align_block_size(const opreg_value *args) {
    return opreg__check_moe_align_block_size_data(TS(0), IV(1));
}

opreg_status opreg__data_check_paged_attention_v1(const opreg_value *args) {
    return opreg__check_paged_attention_v1_data(TS(2), TS(6), TS(7), IV(8), IV(9));
}
