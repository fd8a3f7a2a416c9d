/*
 * The MutableAntichain workload of benchmarks/test_mutable_antichain.py
 * (n distinct times added in a random order, then retired in time order,
 * draining the frontier changes after every update) on the C structure
 * alone, without Python: CPU time per update and the growth of the total
 * per tenfold of n (n log n predicts 12.5x and 12x; n^2 100x).
 *
 *   cc -O3 -DNDEBUG -Icsrc benchmarks/csrc/bench_mutable_antichain.c \
 *      csrc/mutable_antichain.c csrc/sort_rows.c -o /tmp/bench_ma && /tmp/bench_ma
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "mutable_antichain.h"
static double cpu(void){struct timespec t; clock_gettime(CLOCK_PROCESS_CPUTIME_ID,&t); return t.tv_sec+t.tv_nsec*1e-9;}
static uint64_t s=88172645463325252ULL; static uint64_t rnd(void){s^=s<<13;s^=s>>7;s^=s<<17;return s;}
int main(int argc,char**argv){
  const char* shapes[2]={"chain","grid100"};
  for(int sh=0;sh<2;sh++){ double prev=0;
   for(size_t n=10000;n<=1000000;n*=10){
    size_t k= sh==0?1:2;
    uint64_t *pts=malloc(n*k*8); size_t *ord=malloc(n*sizeof(size_t));
    for(size_t i=0;i<n;i++){ if(k==1) pts[i]=i; else {pts[2*i]=i/100; pts[2*i+1]=i%100;} ord[i]=i;}
    for(size_t i=n-1;i>0;i--){size_t j=rnd()%(i+1); size_t t=ord[i];ord[i]=ord[j];ord[j]=t;}
    double best=1e9;
    for(int r=0;r<3;r++){
      tly_ma m; tly_ma_init(&m,k);
      double t0=cpu();
      for(size_t i=0;i<n;i++){ tly_ma_update(&m,pts+ord[i]*k,1); tly_ma_compact_changes(&m); m.clen=0;}
      for(size_t i=0;i<n;i++){ tly_ma_update(&m,pts+i*k,-1); tly_ma_compact_changes(&m); m.clen=0;}
      double el=cpu()-t0; if(el<best)best=el;
      tly_ma_free(&m);
    }
    printf("%s n=%zu %.0f ns/update%s", shapes[sh], n, best*1e9/(2*n), prev? "":"\n");
    if(prev) printf("  growth x%.1f\n", best/prev);
    prev=best; free(pts); free(ord);
   }}
}
