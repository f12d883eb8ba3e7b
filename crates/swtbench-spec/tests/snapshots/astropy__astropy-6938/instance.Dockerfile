FROM --platform=linux/x86_64 exec.env.x86_64.d81a7ecd2364696d235137:latest

COPY ./setup_repo.sh /root/
RUN /bin/bash /root/setup_repo.sh

WORKDIR /testbed/
