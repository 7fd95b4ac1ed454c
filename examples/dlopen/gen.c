/* The library that make examples copies into dlopen-libs/ as many times
 * as DLOPEN_LIBS says: each copy is a library of its own to the dynamic
 * linker (a file of its own), so loading K of them is K loads. */
int gen_calls;

int gen_function(int x)
{
    gen_calls++;
    return x + 1;
}
